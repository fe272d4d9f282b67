import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { e2eSuite, hasChromium, screenshot, SCREENSHOTS, signedInPage, SKIP_REASON } from "./harness";

/**
 * In a real browser against the real app: every list and page fits a 390 px phone (nothing runs
 * off the right edge, the runs and applets filters fold away), and a sample edited in the applet's editor is
 * what its ingredient picker, curl line and Send test event use. Screenshots at 1280 and 390 px
 * (SHOTS_DIR, else tests/e2e/screenshots).
 */
if (!hasChromium) console.warn(`tests/e2e/phone-and-edited-sample.test.ts skipped: ${SKIP_REASON}`);

const SHOTS = process.env.SHOTS_DIR;

describe.skipIf(!hasChromium)("phones and the edited sample", () => {
  const s = e2eSuite();

  const shot = async (page: Page, name: string) => {
    if (!SHOTS) return screenshot(page, name);
    mkdirSync(SHOTS, { recursive: true });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, caret: "initial" });
  };
  const makeWebhookApplet = async (page: Page, name: string, timing?: object) => {
    const res = await page.request.post("/api/applets", {
      data: { name, definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/hook" }, ...(timing ? { timing } : {}) }] } },
    });
    if (!res.ok()) throw new Error(`POST /api/applets: ${res.status()} ${await res.text()}`);
    return ((await res.json()) as { applet: { id: string; webhook_url: string } }).applet;
  };
  /** What sticks out past the viewport's right edge: the page itself, or a table inside its scroll box. */
  const cutOff = (page: Page) =>
    page.evaluate(() => {
      const width = window.innerWidth;
      const out: string[] = [];
      if (document.documentElement.scrollWidth > width) out.push(`the page is ${document.documentElement.scrollWidth} px wide`);
      for (const t of document.querySelectorAll("table")) {
        const box = t.parentElement!;
        if (t.getBoundingClientRect().right > width + 1 || box.scrollWidth > box.clientWidth + 1) out.push(`a table is ${Math.round(t.getBoundingClientRect().width)} px wide`);
      }
      return out;
    });

  it("the applets list, runs list, applet page, run page and settings fit a 390 px phone and hydrate as rendered, and the runs and applets filters fold behind a button", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const applet = await makeWebhookApplet(page, "Orders from the shop's checkout, sent on to the accounting webhook");
    const hook = new URL(applet.webhook_url).pathname;
    for (const id of ["order-1", "order-2"]) expect((await page.request.post(hook, { data: { id } })).status()).toBe(202);
    const { runs } = (await (await page.request.get(`/api/runs?applet_id=${applet.id}`)).json()) as { runs: { id: string }[] };
    // Settings with rows whose times the browser re-renders in its zone: none may hydrate differently.
    expect((await page.request.post("/api/secrets", { data: { name: "SHOP_TOKEN", value: "s3cret" } })).ok()).toBe(true);
    expect((await page.request.post("/api/tokens", { data: { name: "cli", read_only: true, expires_at: new Date(Date.now() + 7 * 86_400_000).toISOString() } })).ok()).toBe(true);
    const hydration: string[] = [];
    page.on("console", (m) => {
      if (/hydrat/i.test(m.text())) hydration.push(`${page.url()}: ${m.text().slice(0, 300)}`);
    });
    expect(runs.length).toBe(2);

    const pages: [string, string, string][] = [
      ["/", "Applets", "phone-applets"],
      ["/runs", "Runs", "phone-runs"],
      [`/applets/${applet.id}`, "Orders from the shop", "phone-applet"],
      [`/runs/${runs[0]!.id}`, "Run", "phone-run"],
      ["/settings", "Settings", "phone-settings"],
    ];
    for (const [url, heading, name] of pages) {
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.goto(url);
      await page.getByRole("heading", { level: 1 }).filter({ hasText: heading }).first().waitFor();
      await page.waitForTimeout(500);
      expect(await cutOff(page), `${url} at 1280 px`).toEqual([]);
      await shot(page, `${name}-1280`);
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForTimeout(300);
      expect(await cutOff(page), `${url} at 390 px`).toEqual([]);
      await shot(page, `${name}-390`);
    }

    // The runs list on a phone: the runs on the first screen, the filter one tap away.
    await page.goto("/runs");
    await page.getByTestId("runs-table").waitFor();
    expect(await page.locator("#f-applet").isVisible()).toBe(false);
    const firstRun = await page.getByTestId("run-link").first().boundingBox();
    expect(firstRun!.y + firstRun!.height).toBeLessThan(844);
    await page.getByTestId("filters-toggle").click();
    await page.locator("#f-applet").waitFor();
    await page.locator("#f-applet").selectOption(applet.id);
    await page.getByRole("button", { name: "Filter", exact: true }).click();
    await page.waitForURL(/applet_id=/);
    await page.getByTestId("filters-toggle").filter({ hasText: "Orders from the shop" }).waitFor();
    expect(await page.locator("#f-applet").isVisible()).toBe(false);
    await shot(page, "phone-runs-filtered-390");

    // The applets list on a phone folds its filter the same way: the applets first, the form a tap away.
    await page.goto("/");
    const appletLink = page.getByRole("link", { name: "Orders from the shop's checkout" });
    await appletLink.waitFor();
    expect(await page.locator("#a-q").isVisible()).toBe(false);
    const firstApplet = await appletLink.boundingBox();
    expect(firstApplet!.y).toBeLessThan(300);
    await page.getByTestId("filters-toggle").click();
    await page.locator("#a-status").waitFor();
    await page.locator("#a-status").selectOption("enabled");
    await page.getByRole("button", { name: "Show", exact: true }).click();
    await page.waitForURL(/status=enabled/);
    await page.getByTestId("filters-toggle").filter({ hasText: "Enabled" }).waitFor();
    expect(await page.locator("#a-q").isVisible()).toBe(false);
    await appletLink.waitFor();
    await shot(page, "phone-applets-filtered-390");
    expect(hydration).toEqual([]);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 300_000);

  it("a sample edited in the editor drives the ingredient picker, the curl line and Send test event; the timing preview names the reader's time; Who may call it helps one preset at a time", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    // Timed an hour after the event: its preview is planned in the applet's zone (UTC here).
    const applet = await makeWebhookApplet(page, "Paid orders", { at: "+1h" });
    await page.goto(`/applets/${applet.id}`);
    const json = page.getByLabel("Sample (JSON)");
    await json.waitFor({ state: "attached" });
    if (!(await json.isVisible())) await page.getByTestId("sample-picker").last().getByText("The sample as JSON").click();
    const sample = JSON.parse(await json.inputValue()) as Record<string, unknown>;
    await json.fill(JSON.stringify({ ...sample, body: { order: { id: "A-7", amount: 59.9 } } }, null, 2));

    // The editor's own ingredient picker offers the edited fields.
    await page.locator('select[aria-label^="Insert ingredient into"] option[value="{{trigger.body.order.amount}}"]').first().waitFor({ state: "attached" });
    // The curl line sends the edited body.
    await page.getByTestId("webhook-curl").filter({ hasText: `-d '{"order":{"id":"A-7","amount":59.9}}'` }).waitFor();
    // The timing preview says the reader's own time too, with the zone named.
    await page.getByTestId("action0-timing-preview").filter({ hasText: /would run at .* in UTC/ }).waitFor();
    expect(await page.getByTestId("action0-timing-preview-local").textContent()).toMatch(/^That is .*\d{2}:\d{2}(:\d{2})? (CET|CEST|GMT\+\d) in your time\.$/);
    // Send test event sends it too.
    const payload = page.getByLabel("Test event payload (JSON)");
    expect((JSON.parse(await payload.inputValue()) as { body: unknown }).body).toEqual({ order: { id: "A-7", amount: 59.9 } });
    await shot(page, "edited-sample-1280");
    await page.getByRole("button", { name: "Send test event" }).click();
    await page.getByRole("status").filter({ hasText: "Queued." }).waitFor();
    const { events } = (await (await page.request.get(`/api/applets/${applet.id}/events`)).json()) as { events: { payload: { body: unknown } }[] };
    expect(events[0]!.payload.body).toEqual({ order: { id: "A-7", amount: 59.9 } });

    // A reload keeps the sample (this tab's), and the built-in one can be picked back everywhere.
    await page.reload();
    await page.getByTestId("webhook-curl").filter({ hasText: '"id":"A-7"' }).waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "edited-sample-390");
    // The editor has hydrated once its ingredient picker offers the edited fields (read from the
    // tab's storage in the browser): a choice made before that is reset by hydration.
    await page.locator('select[aria-label^="Insert ingredient into"] option[value="{{trigger.body.order.amount}}"]').first().waitFor({ state: "attached" });
    await page.locator("#sample-source").selectOption("builtin");
    await page.getByTestId("webhook-curl").filter({ hasNotText: "A-7" }).waitFor();
    expect(JSON.parse(await payload.inputValue())).toEqual(sample);

    // Who may call it: the chosen preset's help alone, not every preset's.
    const help = page.locator("[data-field=verify] .help");
    expect(await help.textContent()).toMatch(/^\(default\) checks nothing beyond the URL's secret token/);
    await page.locator("[data-field=verify] select").selectOption("stripe");
    await help.filter({ hasText: "Stripe-Signature" }).waitFor();
    expect(await help.textContent()).not.toContain("X-Hub-Signature-256");
    await page.locator("[data-field=verify]").screenshot({ path: path.join(SHOTS ?? SCREENSHOTS, "who-may-call-it-390.png") });
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);
});
