import path from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { e2eSuite, FakeServices, hasChromium, screenshot, SCREENSHOTS, signedInPage, SKIP_REASON } from "./harness";

/**
 * In a real browser against the real app: a timed action added in the editor (a
 * reminder 24 h before the time the sample's body carries), saved, an event sent to its webhook,
 * and the planned run on the applet page with its due time; a cancelling event then cancels it,
 * and the run log and the run page say why. Screenshots at 1280 and 390 px.
 */
if (!hasChromium) console.warn(`tests/e2e/timed-actions.test.ts skipped: ${SKIP_REASON}`);

const DAY = 86_400_000;

describe.skipIf(!hasChromium)("timed actions in the browser", () => {
  const s = e2eSuite({ fake: true });

  /** The page at 1280 and 390 px; with `parts`, those elements alone too (a tall page's detail is unreadable whole). */
  const both = async (page: Page, name: string, parts: Record<string, string> = {}) => {
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 1280 ? 900 : 844 });
      const suffix = width === 1280 ? "" : "-390";
      await screenshot(page, `${name}${suffix}`);
      for (const [part, testId] of Object.entries(parts)) await page.getByTestId(testId).screenshot({ path: path.join(SCREENSHOTS, `${name}-${part}${suffix}.png`) });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  };

  it("a reminder -24h anchored at trigger.body.starts_at, added in the editor, is planned by a webhook event and listed on the applet page with its due time", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    // Whole seconds, three days ahead: the reminder is due two days from now, well inside any timeout.
    const startsAt = new Date(Math.floor((Date.now() + 3 * DAY) / 1000) * 1000).toISOString().replace(".000Z", "Z");
    const dueAt = new Date(Date.parse(startsAt) - DAY).toISOString();
    const booking = (event: string, version: number) => ({ event, booking: { id: "b_1042", version }, starts_at: startsAt, title: `Booking ${event}` });

    await page.goto("/applets/new");
    await page.getByTestId("trigger-card-webhook").click();
    await page.getByTestId("action-card-slack").click();
    await page.getByRole("textbox", { name: "Webhook URL" }).fill(s.fake.url("/ok/services/T/B/REMIND"));
    await page.locator("#action0-text").fill("Reminder: {{trigger.body.title}} starts {{trigger.body.starts_at}}");

    // The sample carries the booking's start: the anchor is picked from its time-looking values.
    const json = page.getByLabel("Sample (JSON)");
    if (!(await json.isVisible())) await page.getByText("The sample as JSON").click();
    const sample = JSON.parse(await json.inputValue()) as Record<string, unknown>;
    await json.fill(JSON.stringify({ ...sample, body: booking("booking.created", 1) }, null, 2));

    const timing = page.getByTestId("action0-timing");
    await timing.getByLabel("Run at an offset from a time").check();
    // An offset that does not parse is refused on save, under the field.
    await timing.getByRole("textbox", { name: "Offset", exact: true }).fill("a day before");
    const anchor = timing.getByLabel("From", { exact: true });
    await anchor.locator("option", { hasText: `trigger.body.starts_at = ${startsAt}` }).waitFor({ state: "attached" });
    await anchor.selectOption("trigger.body.starts_at");

    // The record and what cancels it, in the applet's timed settings.
    const settings = page.getByTestId("timed-settings");
    await settings.getByRole("textbox", { name: "Subject id" }).fill("{{trigger.body.booking.id}}");
    await settings.getByRole("textbox", { name: "Subject version" }).fill("{{trigger.body.booking.version}}");
    await settings.getByRole("textbox", { name: "Event type path" }).fill("trigger.body.event");
    await settings.getByRole("textbox", { name: "Values that replace the plan" }).fill("booking.rescheduled, booking.cancelled");
    await settings.getByRole("textbox", { name: "Values that cancel the plan" }).fill("booking.cancelled");
    // A condition on the record; a path outside the ingredients is refused on its own row.
    await settings.getByTestId("add-condition").click();
    await settings.locator("#timed-condition-0-field").fill("booking.id");
    await settings.locator("#timed-condition-0-op").selectOption("exists");

    await page.getByRole("textbox", { name: "Name", exact: true }).fill("Booking reminder");
    await page.getByRole("button", { name: "Save applet" }).click();
    await timing.locator('[data-field="timing.at"]').getByRole("alert").filter({ hasText: /must be an offset/ }).waitFor();
    await page.getByTestId("save-problems").filter({ hasText: "Action 1 (Slack message) › Timing › Offset" }).waitFor();
    await settings.locator('[data-field="timed.conditions.all.0.field"]').getByRole("alert").filter({ hasText: /must be a path that starts with trigger\./ }).waitFor();
    await page.getByTestId("save-problems").filter({ hasText: "Timed actions › Condition 1 › Field" }).waitFor();
    await settings.locator("#timed-condition-0-field").fill("trigger.body.booking.id");

    await timing.getByRole("textbox", { name: "Offset", exact: true }).fill("-24h");
    expect(await page.getByTestId("action0-timing-summary").textContent()).toBe("24 h before trigger.body.starts_at");
    // The preview plans against the sample: a day before its start.
    await page.getByTestId("action0-timing-preview").filter({ hasText: /would run at/ }).waitFor();
    await both(page, "17-editor-timing", { card: "action-slot-0", settings: "timed-settings" });

    await page.getByRole("button", { name: "Save applet" }).click();
    await page.waitForURL(/\/applets\/[0-9a-f-]{36}$/);
    const hook = await page.getByTestId("webhook-url").inputValue();

    await page.getByTestId("upcoming-empty").waitFor();
    const created = await page.request.post(hook, { data: booking("booking.created", 1) });
    expect(created.ok()).toBe(true);

    // Without a reload: the run stream brings the planned run in.
    const upcoming = page.getByTestId("upcoming");
    const row = upcoming.locator("li", { hasText: "Action 1: Slack message" });
    await row.waitFor();
    expect(await row.locator('[data-testid="due-at"] time').getAttribute("datetime")).toBe(dueAt);
    expect(await row.getByTestId("countdown").textContent()).toMatch(/^in (1 d|2 d|4\d h)/);
    expect(await row.textContent()).toContain("b_1042, version 1");
    await both(page, "17-applet-upcoming", { list: "planned-runs" });

    // A cancellation of a newer version cancels the reminder, and says why.
    const cancelled = await page.request.post(hook, { data: booking("booking.cancelled", 2) });
    expect(cancelled.ok()).toBe(true);
    const recent = page.getByTestId("planned-recent");
    await recent.getByTestId("planned-reason").filter({ hasText: "Cancelled: replaced by a newer version of the record" }).waitFor();
    await page.getByTestId("upcoming-empty").waitFor();
    nothingSent(s.fake);
    await both(page, "17-applet-cancelled", { list: "planned-runs" });

    // The run log lists it under its status, with the reason in words and its due time.
    await page.goto("/runs?status=cancelled");
    const runRow = page.getByTestId("runs-table").locator("tr[data-run-id]").first();
    await runRow.filter({ hasText: "Cancelled: replaced by a newer version of the record" }).waitFor();
    expect(await runRow.locator('[data-testid="run-due"] time').getAttribute("datetime")).toBe(dueAt);
    await both(page, "17-runs-cancelled");
    await runRow.getByTestId("run-link").click();
    await page.waitForURL(/\/runs\/[^/]+$/);
    await page.getByTestId("run-timed").filter({ hasText: "Cancelled: replaced by a newer version of the record" }).waitFor();
    expect(await page.getByTestId("run-status").textContent()).toBe("cancelled");
    await both(page, "17-run-cancelled");

    // An event without the anchor's time: a skipped run (no_anchor) whose warning names the path.
    await page.goto(hook.replace(/\/api\/hooks\/([^/]+)\/.*$/, "/applets/$1"));
    const missing = await page.request.post(hook, { data: { event: "booking.created", booking: { id: "b_2000", version: 1 }, title: "No start" } });
    expect(missing.ok()).toBe(true);
    const skipped = page.getByTestId("planned-recent").locator("li", { hasText: "b_2000" });
    await skipped.getByTestId("planned-reason").filter({ hasText: "Skipped: the anchor time was missing or not a time" }).waitFor();
    await skipped.getByRole("link", { name: "Action 1: Slack message" }).click();
    await page.waitForURL(/\/runs\/[^/]+$/);
    await page.getByTestId("run-timed").filter({ hasText: "Skipped: the anchor time was missing or not a time" }).waitFor();
    expect(await page.getByTestId("run-plan").textContent()).toContain("trigger.body.starts_at");
    await both(page, "17-run-skipped");
    nothingSent(s.fake);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 300_000);
});

/** The reminder was due days from now and then cancelled: Slack never heard of it. */
function nothingSent(fake: FakeServices): void {
  expect(fake.received.filter((r) => r.path.includes("REMIND"))).toEqual([]);
}
