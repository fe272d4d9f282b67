
import { describe, expect, it } from "vitest";
import { APPLET_EXAMPLES } from "@/lib/applets/examples";
import { ADMIN, e2eSuite, hasChromium, postJson, screenshot, signedInPage, SKIP_REASON } from "./harness";

/**
 * The rest, in a real browser against the real app: the password change in Settings,
 * runs search and bulk retry, the onboarding examples, tags, the keyboard, and "listen for test
 * event". The password change runs last: it signs out every other session.
 */
if (!hasChromium) console.warn(`tests/e2e/everyday-management.test.ts skipped: ${SKIP_REASON}`);

describe.skipIf(!hasChromium)("managing applets, runs and the account", () => {
  const s = e2eSuite();

  it("an empty install offers every ready example; a click saves one as a disabled applet and opens it", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    await page.goto("/");
    const examples = page.getByTestId("examples");
    await examples.waitFor();
    expect(await examples.getByRole("listitem").count()).toBe(APPLET_EXAMPLES.length);
    await screenshot(page, "20-applets-examples");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "20-applets-examples-390");
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.getByRole("button", { name: "Use the example “Contact form → notes”" }).click();
    await page.waitForURL(/\/applets\/[0-9a-f-]{36}$/);
    await page.getByRole("heading", { name: "Contact form → notes" }).first().waitFor();
    expect(await page.getByRole("switch").first().getAttribute("aria-checked")).toBe("false");
    // Tags, edited on the applet and filtered by in the list.
    const tags = page.getByTestId("tags-editor");
    await tags.getByLabel("Tags").fill("laptop, Inbox");
    await tags.getByRole("button", { name: "Save tags" }).click();
    await tags.getByText("Saved.").waitFor();
    await postJson(page, "/api/applets/from-example", { key: "schedule-to-email" });
    await page.goto("/");
    await page.getByLabel("Tag").selectOption("Inbox");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/tag=Inbox/);
    expect(await page.getByRole("link", { name: "Contact form → notes" }).count()).toBe(1);
    expect(await page.getByRole("link", { name: "Weekday standup reminder" }).count()).toBe(0);
    await screenshot(page, "20-applets-tag-filter");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("runs are found by error text and by a payload value; the failed ones are retried in bulk after a confirmation that says how many; a replay links to its original", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const { applet } = await postJson<{ applet: { id: string } }>(page, "/api/applets", {
      name: "Orders that fail",
      definition: {
        version: 1,
        trigger: { type: "webhook", config: {} },
        // Fails at once and for good, without the sandbox (whose deadline a busy machine can miss):
        // the rendered file name holds a folder.
        actions: [{ type: "note", config: { filename: "{{trigger.body.order}}/orders.md", content: "{{trigger.body.order}}" } }],
      },
    });
    const runIds: string[] = [];
    for (const order of [1041, 1042, 1043]) runIds.push((await postJson<{ run_id: string }>(page, `/api/applets/${applet.id}/test`, { body: { order } })).run_id);
    // Wait until the worker has failed all three.
    const statusOf = async (id: string) => ((await (await page.request.get(`/api/runs/${id}`)).json()) as { run: { status: string } }).run.status;
    for (const id of runIds) await expect.poll(() => statusOf(id), { timeout: 180_000, interval: 250 }).toBe("failed");
    // By a value in the payload: one run.
    await page.goto("/runs");
    await page.getByLabel("Payload contains").fill("1042");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/payload=1042/);
    await page.locator(`[data-run-id="${runIds[1]}"]`).waitFor();
    expect(await page.locator("[data-run-id]").count()).toBe(1);
    // By error text: all three.
    await page.goto("/runs?error=CANNOT%20HOLD%20FOLDERS");
    for (const id of runIds) await page.locator(`[data-run-id="${id}"]`).waitFor();
    expect(await page.locator("[data-run-id]").count()).toBe(3);
    await page.getByTestId("select-all-runs").check();
    await page.getByRole("button", { name: "Retry 3 runs…" }).click();
    await page.getByTestId("bulk-retry-confirm").filter({ hasText: "Retry 3 runs?" }).waitFor();
    await screenshot(page, "20-runs-bulk-retry-confirm");
    await page.getByRole("button", { name: "Yes, retry 3 runs" }).click();
    await page.getByTestId("bulk-retry-result").filter({ hasText: "Retried 3 runs." }).waitFor();
    for (const id of runIds) {
      const run = ((await (await page.request.get(`/api/runs/${id}`)).json()) as { run: { attempt: number } }).run;
      expect(run.attempt).toBe(2);
    }
    await screenshot(page, "20-runs-search-bulk-retry");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId("select-all-runs").check();
    await page.getByRole("button", { name: /Retry \d runs?…/ }).click();
    await screenshot(page, "20-runs-search-bulk-retry-390");
    await page.setViewportSize({ width: 1280, height: 900 });

    // Replay: the new run says what it replays, and the original lists it.
    await page.goto(`/runs/${runIds[0]}`);
    await page.getByRole("button", { name: "Replay" }).click();
    await page.waitForURL((u) => u.pathname.startsWith("/runs/") && !u.pathname.endsWith(runIds[0]!));
    await page.getByTestId("replay-of").getByRole("link").click();
    await page.waitForURL((u) => u.pathname.endsWith(runIds[0]!));
    await page.getByTestId("replays").getByRole("link").first().waitFor();
    expect(errors).toEqual([]);
    await page.context().close();
  }, 420_000);

  it("keyboard — a skip link first on every page, Ctrl+S saves in the editor, and a refused save puts the focus on the first error", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    for (const path of ["/", "/runs", "/settings", "/applets/new"]) {
      await page.goto(path);
      await page.keyboard.press("Tab");
      expect(await page.evaluate(() => document.activeElement?.textContent), path).toBe("Skip to content");
      await page.keyboard.press("Enter");
      expect(await page.evaluate(() => document.activeElement?.id), path).toBe("main");
    }
    // A refused save (an empty required field) by Ctrl+S: the focus lands on the field.
    await page.goto("/applets/new");
    await page.getByTestId("trigger-card-webhook").click();
    await page.getByTestId("action-card-note").click();
    await page.locator("#applet-name").fill("Keyboard test");
    await page.keyboard.press("Control+s");
    await page.getByTestId("save-problems").waitFor();
    await page.waitForFunction(() => document.activeElement?.getAttribute("aria-invalid") === "true", undefined, { timeout: 10_000 }).catch(() => undefined);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-invalid"))).toBe("true");
    // Fixed, Ctrl+S saves and opens the applet; there, Ctrl+S saves an edit in place.
    const { applet } = await postJson<{ applet: { id: string } }>(page, "/api/applets/from-example", { key: "webhook-to-note" });
    await page.goto(`/applets/${applet.id}`);
    await page.locator("#applet-name").fill("Contact form → notes (renamed by Ctrl+S)");
    await page.keyboard.press("Control+s");
    await page.getByText("Saved.", { exact: true }).first().waitFor();
    const stored = ((await (await page.request.get(`/api/applets/${applet.id}`)).json()) as { applet: { name: string } }).applet;
    expect(stored.name).toBe("Contact form → notes (renamed by Ctrl+S)");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("'Listen for test event' on a disabled draft webhook: the first real request becomes the sample, and nothing runs", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const { applet } = await postJson<{ applet: { id: string; webhook_url: string } }>(page, "/api/applets/from-example", { key: "webhook-to-note" });
    await page.goto(`/applets/${applet.id}`);
    const listen = page.getByTestId("listen");
    await listen.getByRole("button", { name: "Listen for test event" }).click();
    await listen.getByText("Listening for a request").waitFor();
    await screenshot(page, "20-editor-listening");
    const sent = await fetch(applet.webhook_url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "Real Sender", email: "real@example.org", message: "order 7731" }) });
    expect(sent.status).toBe(200);
    await listen.getByTestId("listen-result").filter({ hasText: "Got a request" }).waitFor({ timeout: 30_000 });
    const json = page.getByLabel("Sample (JSON)");
    if (!(await json.isVisible())) await page.getByText("The sample as JSON").click();
    expect(await json.inputValue()).toContain("order 7731");
    // Disabled: the request was kept, its run skipped.
    const runs = ((await (await page.request.get(`/api/runs?applet_id=${applet.id}`)).json()) as { runs: { status: string }[] }).runs;
    expect(runs.map((r) => r.status)).toEqual(["skipped"]);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("the password is changed in Settings with the current one; another browser is signed out, this one stays", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const other = await signedInPage(s.browser, s.app);
    await page.goto("/settings");
    const form = page.getByTestId("change-password");
    await form.getByLabel("Current password").fill("not the password");
    await form.getByLabel("New password", { exact: true }).fill("a new password for e2e");
    await form.getByLabel("New password again").fill("a new password for e2e");
    await form.getByRole("button", { name: "Change password" }).click();
    await form.getByText("current password is wrong").waitFor();
    // The first field in error has the focus.
    await page.waitForFunction(() => document.activeElement?.getAttribute("name") === "current_password", undefined, { timeout: 5_000 }).catch(() => undefined);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("name"))).toBe("current_password");
    await form.getByLabel("Current password").fill(ADMIN.password);
    await form.getByRole("button", { name: "Change password" }).click();
    await page.getByTestId("password-changed").waitFor();
    await screenshot(page, "20-settings-password");
    // This browser is still signed in; the other one is sent to the sign-in page.
    await page.reload();
    expect(new URL(page.url()).pathname).toBe("/settings");
    await other.page.goto("/runs");
    await other.page.waitForURL(/\/login/);
    // Only the new password signs in.
    const res = await other.page.request.post("/api/login", { data: { email: ADMIN.email, password: ADMIN.password } });
    expect(res.status()).toBe(401);
    expect((await other.page.request.post("/api/login", { data: { email: ADMIN.email, password: "a new password for e2e" } })).status()).toBe(200);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId("change-password").scrollIntoViewIfNeeded();
    await screenshot(page, "20-settings-password-390");
    expect(errors).toEqual([]);
    await other.page.context().close();
    await page.context().close();
  }, 240_000);
});
