
import { describe, expect, it } from "vitest";
import { e2eSuite, hasChromium, postJson, screenshot, signedInPage, SKIP_REASON } from "./harness";

/**
 * In a real browser against the real app: the editor tested against real data, errors at
 * the field, the draft webhook URL, live header counters, the email applet's address and a run
 * waiting for its retry, with screenshots at 1280 and 390 px.
 */
if (!hasChromium) console.warn(`tests/e2e/editor-real-data.test.ts skipped: ${SKIP_REASON}`);

describe.skipIf(!hasChromium)("the editor and the run log with real data", () => {
  const s = e2eSuite({ fake: true });

  it("a fetched RSS item drives Preview and Test filter, and an edited sample checks skip()", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    await page.goto("/applets/new");
    await page.getByTestId("trigger-card-rss").click();
    await page.getByRole("textbox", { name: "Feed URL" }).fill(s.fake.url("/feed.xml"));
    await page.getByTestId("action-card-slack").click();
    await page.getByRole("textbox", { name: "Webhook URL" }).fill(s.fake.url("/ok/services/T/B/X"));
    await page.locator("#action0-text").fill("New post: {{trigger.title}}");

    await page.getByRole("button", { name: "Fetch now" }).click();
    await page.getByTestId("fetch-result").filter({ hasText: /\d+ items in the feed(:|; the first 3:)/ }).waitFor();
    // The second item is not the built-in sample's: Preview must render it.
    await page.getByLabel("Test with", { exact: true }).selectOption({ label: "Why our backups were silently empty for a week" });
    await page.getByRole("button", { name: "Preview", exact: true }).click();
    await page.getByTestId("preview-0-text").filter({ hasText: "New post: Why our backups were silently empty for a week" }).waitFor();

    await page.getByRole("button", { name: "Add filter code" }).click();
    await page.getByRole("textbox", { name: "Filter code" }).fill("if (trigger.title.startsWith('Draft')) skip('a draft');");
    await page.getByRole("button", { name: "Test filter" }).click();
    await page.getByTestId("filter-result").filter({ hasText: "Passes" }).waitFor();

    // Edited by hand: a draft title, before anything is saved.
    const json = page.getByLabel("Sample (JSON)");
    if (!(await json.isVisible())) await page.getByText("The sample as JSON").click();
    const sample = JSON.parse(await json.inputValue()) as Record<string, unknown>;
    await json.fill(JSON.stringify({ ...sample, title: "Draft: not yet" }, null, 2));
    await page.getByRole("button", { name: "Test filter" }).click();
    await page.getByTestId("filter-result").filter({ hasText: "Skipped: a draft" }).waitFor();
    // Invalid JSON is said at the box.
    await json.fill("{ title: ");
    await page.getByText(/^Not valid JSON/).waitFor();
    await json.fill(JSON.stringify({ ...sample, title: "Draft: not yet" }, null, 2));
    await screenshot(page, "20-editor-sample-picker");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "20-editor-sample-picker-390");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("an untouched placeholder is an error under its field, in its label's words; 'Use' fills it in", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    await page.goto("/applets/new");
    await page.getByTestId("trigger-card-webhook").click();
    await page.getByTestId("action-card-slack").click();
    await page.locator("#action0-text").fill("hello");
    const url = page.getByRole("textbox", { name: "Webhook URL" });
    // A placeholder reads as an example.
    expect(await url.getAttribute("placeholder")).toBe("e.g. {{secrets.SLACK_WEBHOOK}}");
    await page.getByRole("button", { name: "Save applet" }).click();
    const field = page.locator('[data-field="webhook_url"]');
    await field.getByRole("alert").filter({ hasText: /^Webhook URL is empty/ }).waitFor();
    const summary = page.getByTestId("save-problems");
    await summary.filter({ hasText: "Action 1 (Slack message) › Webhook URL: Webhook URL is empty" }).waitFor();
    expect(await summary.textContent()).not.toContain("definition.actions");
    // Focus is on the first field in error (moved in the frame after the problems render).
    await page.waitForFunction(() => document.activeElement?.id === "action0-webhook_url", undefined, { timeout: 5_000 }).catch(() => undefined);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("action0-webhook_url");
    await screenshot(page, "20-editor-field-errors");
    await field.getByRole("button", { name: /Use the example for Webhook URL/ }).click();
    expect(await url.inputValue()).toBe("{{secrets.SLACK_WEBHOOK}}");
    // No such secret yet: said at the field before saving.
    await field.getByTestId("field-warning").filter({ hasText: "There is no secret named SLACK_WEBHOOK" }).waitFor();
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("/ a new webhook applet gets its URL before the first save, and the header counters follow a test event", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    await page.goto("/applets/new");
    await page.getByTestId("trigger-card-webhook").click();
    await page.getByTestId("action-card-slack").click();
    await page.getByRole("textbox", { name: "Webhook URL" }).fill(s.fake.url("/ok/services/T/B/Y"));
    await page.locator("#action0-text").fill("Order: {{trigger.body.title}}");
    await page.getByRole("button", { name: "Get the URL (save as a disabled draft)" }).click();
    await page.waitForURL(/\/applets\/[0-9a-f-]{36}$/);
    const hook = await page.getByTestId("webhook-url").inputValue();
    expect(hook).toMatch(/\/api\/hooks\/[0-9a-f-]{36}\/[A-Za-z0-9_-]{40,}$/);
    expect(await page.getByRole("switch").first().getAttribute("aria-checked")).toBe("false");

    await page.evaluate(() => ((window as unknown as { __noReload: boolean }).__noReload = true));
    await page.getByTestId("run-count").filter({ hasText: /^0$/ }).waitFor();
    await page.getByRole("button", { name: "Send test event" }).click();
    await page.getByRole("link", { name: "Open the run" }).waitFor();
    // Without a reload: the stream brings the counters up.
    await page.getByTestId("run-count").filter({ hasText: /^1$/ }).waitFor();
    expect(await page.getByTestId("last-fired").textContent()).not.toBe("–");
    expect(await page.evaluate(() => (window as unknown as { __noReload?: boolean }).__noReload)).toBe(true);
    // The test event carried this send's received_at, not the sample's 2026-03-07.
    const sent = JSON.parse(s.fake.received.at(-1)!.body) as { text: string };
    expect(sent.text).toBe("Order: Order #1042 paid");
    // The past event is offered as a sample.
    await page.reload();
    await page.locator("#sample-source option", { hasText: "manual" }).first().waitFor({ state: "attached" });
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("the email applet's page shows its inbound address at the top", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const { applet } = await postJson<{ applet: { id: string } }>(page, "/api/applets", {
      name: "Invoices to notes",
      enabled: false,
      definition: { version: 1, trigger: { type: "email", config: { to_alias: "invoices" } }, actions: [{ type: "note", config: { filename: "{{trigger.subject | slug}}.md", content: "{{trigger.text}}" } }] },
    });
    await page.goto(`/applets/${applet.id}`);
    const top = page.getByTestId("inbound-address");
    expect(await top.getByRole("textbox", { name: "Inbound address" }).inputValue()).toMatch(/^invoices@/);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("/ a run waiting for its retry reads 'retrying: attempt 2 of 5 pending at …' in the list and on its page, with no ran-twice banner", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const { applet } = await postJson<{ applet: { id: string } }>(page, "/api/applets", {
      name: "Failing webhook → Slack",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: s.fake.url("/down/services/T/B/Z"), text: "x" } }] },
    });
    const { run_id } = await postJson<{ run_id: string }>(page, `/api/applets/${applet.id}/test`, { body: { title: "x" } });
    await page.goto("/runs");
    await page.locator(`[data-run-id="${run_id}"]`, { hasText: /retrying: attempt 2 of 5 pending at .+/ }).waitFor();
    await screenshot(page, "20-runs-retrying");
    await page.goto(`/runs/${run_id}`);
    await page.getByTestId("run-status").filter({ hasText: /^retrying: attempt 2 of 5 pending at .+$/ }).waitFor();
    expect(await page.getByTestId("rerun-banner").count()).toBe(0);
    await screenshot(page, "20-run-retrying");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "20-run-retrying-390");
    await page.goto("/");
    await screenshot(page, "20-applets-failing-390");
    await page.setViewportSize({ width: 1280, height: 900 });
    await screenshot(page, "20-applets-failing");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);
});
