import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { e2eSuite, hasChromium, screenshot, signedInPage, SKIP_REASON } from "./harness";

/**
 * The fire ledger and expected activity in a real browser against the real app and worker: a
 * webhook applet's ledger (a fire, a redelivery deduplicated) filtered by outcome on its page, the
 * quiet mark on the page and in the list (the silence made by moving its times back in the
 * database: the expectation is hours long), and a schedule's next five fire times. Screenshots at
 * 1280 and 390 px (SHOTS_DIR, else tests/e2e/screenshots).
 */
if (!hasChromium) console.warn(`tests/e2e/fire-ledger.test.ts skipped: ${SKIP_REASON}`);

const SHOTS = process.env.SHOTS_DIR;

describe.skipIf(!hasChromium)("the fire ledger and quiet applets", () => {
  const s = e2eSuite();

  const request = async <T>(page: Page, method: "post" | "put", url: string, data: unknown): Promise<T> => {
    const res = await page.request[method](url, { data });
    if (!res.ok()) throw new Error(`${method.toUpperCase()} ${url}: ${res.status()} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const shot = async (page: Page, name: string) => {
    if (!SHOTS) return screenshot(page, name);
    mkdirSync(SHOTS, { recursive: true });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, caret: "initial" });
  };

  it("shows the ledger with its outcome filter, the quiet mark on the applet page and in the list, and a schedule's next fire times", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const { applet } = await request<{ applet: { id: string; webhook_url: string } }>(page, "post", "/api/applets", {
      name: "Orders webhook",
      definition: { version: 1, trigger: { type: "webhook", config: { dedupe_path: "id" } }, actions: [{ type: "http", config: { url: "https://example.com/hook" } }] },
    });
    const hook = new URL(applet.webhook_url).pathname;
    expect((await page.request.post(hook, { data: { id: "order-1" } })).status()).toBe(202);
    expect((await (await page.request.post(hook, { data: { id: "order-1" } })).json()) as object).toMatchObject({ duplicate: true });
    await request(page, "put", `/api/applets/${applet.id}/activity`, { expect_every_hours: 24 });
    // 26 hours of silence: the applet, its expectation and its one event moved back in time.
    const db = new Database(path.join(s.app.dataDir, "app.db"));
    db.pragma("busy_timeout = 5000");
    const back = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
    db.prepare("UPDATE applets SET created_at = ? WHERE id = ?").run(back(30), applet.id);
    db.prepare("UPDATE applet_activity SET expect_since = ? WHERE applet_id = ?").run(back(30), applet.id);
    // A run's own ledger row is the run created with its event: both move to the same instant.
    const lastEvent = back(26);
    db.prepare("UPDATE events SET received_at = ? WHERE applet_id = ?").run(lastEvent, applet.id);
    db.prepare("UPDATE runs SET created_at = ? WHERE applet_id = ?").run(lastEvent, applet.id);
    db.close();

    const { applet: digest } = await request<{ applet: { id: string } }>(page, "post", "/api/applets", {
      name: "Weekday digest",
      definition: { version: 1, trigger: { type: "schedule", config: { cron: "0 9 * * 1-5", timezone: "Europe/Berlin" } }, actions: [{ type: "http", config: { url: "https://example.com/digest" } }] },
    });

    await page.goto("/");
    await page.getByTestId("quiet-mark").waitFor();
    expect(await page.getByTestId("quiet-mark").textContent()).toMatch(/quiet\s*No webhook for 26 h; one is expected every 24 h\. Last one: /);
    await page.getByLabel("Status").selectOption("quiet");
    await page.locator("form[role=search] button[type=submit]").click();
    await page.waitForURL(/status=quiet/);
    await page.getByTestId("quiet-mark").waitFor();
    await shot(page, "ledger-list-quiet-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "ledger-list-quiet-390");
    await page.setViewportSize({ width: 1280, height: 900 });

    await page.goto(`/applets/${applet.id}`);
    await page.getByTestId("quiet-banner").waitFor();
    expect(await page.getByTestId("quiet-banner").textContent()).toMatch(/No webhook for 26 h; one is expected every 24 h/);
    const rows = page.getByTestId("ledger-row");
    expect(await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-outcome")))).toEqual(["deduplicated", "fired"]);
    await page.getByLabel("Outcome").selectOption("deduplicated");
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="ledger-row"]').length === 1);
    expect(await rows.first().textContent()).toMatch(/the key "order-1" was already delivered/);
    await page.getByTestId("fire-ledger").scrollIntoViewIfNeeded();
    await shot(page, "ledger-applet-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "ledger-applet-390");
    await page.setViewportSize({ width: 1280, height: 900 });

    await page.goto(`/applets/${digest.id}`);
    await page.getByTestId("next-fires").waitFor();
    const cells = await page.getByTestId("next-fires").locator("tbody tr").count();
    expect(cells).toBe(5);
    expect(await page.getByTestId("next-fires").textContent()).toMatch(/In Europe\/Berlin/);
    await shot(page, "ledger-schedule-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, "ledger-schedule-390");
    expect(errors).toEqual([]);
  }, 300_000);
});
