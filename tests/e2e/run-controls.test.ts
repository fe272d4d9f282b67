import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { ADMIN, e2eSuite, hasChromium, screenshot, signedInPage, SKIP_REASON } from "./harness";

/**
 * Controls over runs on the applet page, in a real browser against the real app: a value out of
 * range is refused under its field, a key that renders empty for the latest event is warned about,
 * and a saved setting is what the API then reads. Screenshots at 1280 and 390 px (SHOTS_DIR, else
 * tests/e2e/screenshots).
 */
if (!hasChromium) console.warn(`tests/e2e/run-controls.test.ts skipped: ${SKIP_REASON}`);

const SHOTS = process.env.SHOTS_DIR;

describe.skipIf(!hasChromium)("controls over runs on the applet page", () => {
  const s = e2eSuite({
    ready: async (suite) => {
      // Compiles the pages this test opens before it starts (a dev server compiles on first request).
      const warm = await suite.browser.newContext({ baseURL: suite.app.url });
      await warm.request.post("/api/login", { data: { email: ADMIN.email, password: ADMIN.password }, timeout: 300_000 });
      for (const url of ["/", "/login"]) await warm.request.get(url, { timeout: 300_000 });
      await warm.close();
    },
  });

  const shot = async (page: Page, name: string) => {
    if (!SHOTS) return screenshot(page, name);
    mkdirSync(SHOTS, { recursive: true });
    await page.locator("#controls").scrollIntoViewIfNeeded();
    await page.locator("#controls").screenshot({ path: path.join(SHOTS, `${name}.png`) });
  };

  it("refuses a concurrency of 0 under its field, warns about a key that renders empty, and saves per-key concurrency with a rate limit", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    // The applet page is the dev server's biggest first compile.
    page.setDefaultTimeout(300_000);
    const res = await page.request.post("/api/applets", {
      data: { name: "Orders webhook", definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/hook" } }] } },
    });
    const { applet } = (await res.json()) as { applet: { id: string; webhook_url: string } };
    // The latest event has no customer_id: a key naming it renders empty.
    expect((await page.request.post(new URL(applet.webhook_url).pathname, { data: { order: 1 } })).status()).toBe(202);

    await page.goto(`/applets/${applet.id}`);
    const form = page.getByTestId("run-controls");
    await form.waitFor();
    await form.getByLabel("Several in parallel").check();
    await form.getByLabel("At most this many at once").fill("0");
    await form.getByRole("button", { name: "Save controls" }).click();
    await expect.poll(async () => (await form.textContent()) ?? "", { timeout: 180_000 }).toMatch(/concurrency\.max: must be at least 1/);
    await shot(page, "controls-refused-1280");

    await form.getByLabel("One at a time per key").check();
    await form.getByLabel("Key (a template, rendered for each event)").fill("{{trigger.body.customer_id}}");
    await form.getByLabel("Limit how many runs start").check();
    await form.getByRole("button", { name: "Save controls" }).click();
    await page.getByTestId("controls-warning").waitFor();
    expect(await page.getByTestId("controls-warning").textContent()).toMatch(/^Key renders empty for the sample event/);
    const read = (await (await page.request.get(`/api/applets/${applet.id}/controls`)).json()) as { controls: unknown };
    expect(read.controls).toEqual({ concurrency: { mode: "per_key", key: "{{trigger.body.customer_id}}" }, rate_limit: { max: 10, period_seconds: 60, overflow: "wait" } });
    await shot(page, "controls-saved-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.getByTestId("run-controls").waitFor();
    await shot(page, "controls-saved-390");
    expect(errors).toEqual([]);
  }, 300_000);

  it("saves strict order (a waiting run holds back the next ones), which parallel lanes do not offer", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    page.setDefaultTimeout(300_000);
    const res = await page.request.post("/api/applets", {
      data: { name: "Bookings", definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/hook" } }] } },
    });
    const { applet } = (await res.json()) as { applet: { id: string } };
    await page.goto(`/applets/${applet.id}`);
    const form = page.getByTestId("run-controls");
    await form.waitFor();
    await form.getByLabel("Several in parallel").check();
    expect(await form.getByTestId("controls-strict").count()).toBe(0);
    await form.getByLabel("One at a time, in order").check();
    await form.getByTestId("controls-strict").check();
    await form.getByRole("button", { name: "Save controls" }).click();
    await expect.poll(async () => (await form.textContent()) ?? "", { timeout: 180_000 }).toMatch(/Saved/);
    const read = (await (await page.request.get(`/api/applets/${applet.id}/controls`)).json()) as { controls: unknown };
    expect(read.controls).toEqual({ order: "strict" });
    await shot(page, "controls-strict-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.getByTestId("run-controls").waitFor();
    expect(await page.getByTestId("controls-strict").isChecked()).toBe(true);
    await shot(page, "controls-strict-390");
    expect(errors).toEqual([]);
  }, 300_000);
});
