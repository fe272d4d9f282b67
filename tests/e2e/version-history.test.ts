import Database from "better-sqlite3";
import path from "node:path";

import { describe, expect, it } from "vitest";
import { e2eSuite, hasChromium, screenshot, SCREENSHOTS, signedInPage, SKIP_REASON } from "./harness";

/**
 * Version history, in a real browser against the real app: edit an applet twice, open
 * its History, read the diff, restore the first version and find it in the editor; the run page
 * links to the version the run executed. Screenshots of the History and the diff at 1280 and 390 px.
 */
if (!hasChromium) console.warn(`tests/e2e/version-history.test.ts skipped: ${SKIP_REASON}`);

describe.skipIf(!hasChromium)("version history of applets in the browser", () => {
  const s = e2eSuite({ fake: true });

  it("edit an applet twice, open History, see the diff, restore, see the restored definition in the editor", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const created = await page.request.post("/api/applets", {
      data: { name: "Deploy notice", enabled: true, definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: s.fake.url("/ok/services/T/B/X"), text: "Deploy one" } }] } },
    });
    expect(created.status()).toBe(201);
    const id = ((await created.json()) as { applet: { id: string } }).applet.id;

    await page.goto(`/applets/${id}`);
    // Hydrated (the runs table's live stream is connected) before anything is typed.
    await page.getByText("Live", { exact: true }).waitFor();
    const text = page.locator("#action0-text");
    for (const value of ["Deploy two", "Deploy three: {{trigger.body.commit}}"]) {
      await text.fill(value);
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    }

    await page.getByTestId("history-toggle").filter({ hasText: "Show history (3 versions)" }).click();
    const list = page.getByTestId("history-list");
    await list.waitFor();
    expect(await list.locator("li").count()).toBe(3);
    expect(await page.getByTestId("version-3").getByTestId("version-summary").textContent()).toBe("Action 1 (slack): text");
    expect(await page.getByTestId("version-1").getByTestId("version-summary").textContent()).toBe("Created");
    await page.getByTestId("version-3").getByText(/admin@whenthen\.test/).waitFor();
    // The diff of the newest save against the one before: the changed field, old and new.
    const diff = page.getByTestId("version-diff");
    await diff.locator('[data-diff="add"]').first().waitFor();
    const texts = async (kind: string) => (await diff.locator(`[data-diff="${kind}"] td:last-child`).allTextContents()).map((t) => t.replace(/\s+/g, " ").trim());
    expect(await texts("del")).toEqual(['− "text": "Deploy two",']);
    expect(await texts("add")).toEqual(['+ "text": "Deploy three: {{trigger.body.commit}}",']);
    await screenshot(page, "18-history");
    await page.locator("#history").screenshot({ path: path.join(SCREENSHOTS, "18-history-panel.png") });
    // Any two versions: from 1 to 3.
    await diff.getByLabel("from").selectOption("1");
    await diff.locator('[data-diff="del"]').filter({ hasText: "Deploy one" }).waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "18-history-390");
    await page.locator("#history").screenshot({ path: path.join(SCREENSHOTS, "18-history-panel-390.png") });
    await page.setViewportSize({ width: 1280, height: 900 });

    // Restore version 1: a new save (version 4), and the editor shows it.
    await page.getByTestId("restore-1").click();
    await page.waitForURL((u) => u.searchParams.get("restored") === "4");
    await page.getByTestId("version-4").getByTestId("version-summary").filter({ hasText: "Restored version 1 (action 1 (slack): text)" }).waitFor();
    await expect.poll(() => page.locator("#action0-text").inputValue()).toBe("Deploy one");
    await page.getByText("· version 4").waitFor();
    // Stored as a step list (version 2): the first action is the step `action_1`.
    const stored = (await (await page.request.get(`/api/applets/${id}`)).json()) as { applet: { version: number; definition: { steps: { id: string; config?: { text: string } }[] } } };
    expect([stored.applet.version, stored.applet.definition.steps.find((s) => s.id === "action_1")?.config?.text]).toEqual([4, "Deploy one"]);
    await screenshot(page, "18-history-restored");

    // A version today's checks refuse (as an older release may have stored it): not restored, each field named.
    const db = new Database(path.join(s.app.dataDir, "app.db"));
    db.prepare("UPDATE applet_versions SET definition = json_set(definition, '$.steps[0].config.webhook_url', 'not a url') WHERE applet_id = ? AND version = 2").run(id);
    db.close();
    await page.getByTestId("restore-2").click();
    const refused = page.getByTestId("restore-error");
    await refused.filter({ hasText: "Version 2 was not restored" }).waitFor();
    expect(await refused.textContent()).toContain("definition.steps.0.config.webhook_url");
    expect(await page.locator("#action0-text").inputValue()).toBe("Deploy one");
    await page.locator("#history").screenshot({ path: path.join(SCREENSHOTS, "18-restore-refused.png") });

    // A run links to the version it ran with.
    const test = await page.request.post(`/api/applets/${id}/test`, { data: { body: { commit: "abc" } } });
    const runId = ((await test.json()) as { run_id: string }).run_id;
    await page.goto(`/runs/${runId}`);
    await page.getByTestId("run-status").filter({ hasText: /succeeded/i }).waitFor();
    await page.reload();
    const link = page.getByTestId("run-version");
    expect(await link.textContent()).toBe("version 4");
    await screenshot(page, "18-run-page");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "18-run-page-390");
    await page.setViewportSize({ width: 1280, height: 900 });
    await link.click();
    await page.waitForURL((u) => u.searchParams.get("version") === "4");
    await page.getByTestId("history-list").waitFor();
    await screenshot(page, "18-run-version-link");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 300_000);
});
