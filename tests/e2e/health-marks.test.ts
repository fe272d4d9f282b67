
import { describe, expect, it } from "vitest";
import { e2eSuite, hasChromium, postJson, screenshot, signedInPage, SKIP_REASON } from "./harness";

/**
 * The health at a glance part, in a real browser against the real app: the worker banner comes
 * and goes without a reload, and an RSS applet pointed at a JSON URL shows its trigger error mark
 * in the list. The heartbeat window is shortened through the environment (a heartbeat every
 * second, stale after 4 s), so nothing waits for minutes.
 */
if (!hasChromium) console.warn(`tests/e2e/health-marks.test.ts skipped: ${SKIP_REASON}`);

describe.skipIf(!hasChromium)("health at a glance", () => {
  const s = e2eSuite({ env: { WORKER_LEASE_SECONDS: "3", WORKER_STALE_SECONDS: "4" }, fake: true });

  it("an RSS applet pointed at a JSON URL shows its trigger error mark in the list, with the message on hover and on tap", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    await postJson(page, "/api/applets", {
      name: "Prices as a feed",
      definition: {
        version: 1,
        trigger: { type: "rss", config: { url: s.fake.url("/price.json"), interval_min: 5, fire_on_first_poll: true } },
        actions: [{ type: "slack", config: { webhook_url: s.fake.url("/ok/services/T/B/X"), text: "{{trigger.title}}" } }],
      },
    });
    await postJson(page, "/api/applets", {
      name: "A healthy webhook",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: s.fake.url("/ok/services/T/B/Y"), text: "x" } }] },
    });
    // A webhook whose Slack answers 400 (not retried): its run fails.
    const { applet: failing } = await postJson<{ applet: { id: string } }>(page, "/api/applets", {
      name: "Slack refuses",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: s.fake.url("/fail/services/T/B/Z"), text: "x" } }] },
    });
    await postJson(page, `/api/applets/${failing.id}/test`, { body: { title: "x" } });
    // The worker's scheduler polls the new applet at its next tick (every 15 s); the list is a
    // server-rendered page, so it is reloaded until the mark is there.
    await page.goto("/");
    const mark = page.getByTestId("trigger-error-mark");
    const failed = page.getByTestId("failed-24h");
    for (let i = 0; i < 60 && ((await mark.count()) === 0 || (await failed.count()) === 0); i++) {
      await page.waitForTimeout(1000);
      await page.reload();
    }
    await mark.waitFor();
    expect(await page.locator("tr", { has: failed }).getByRole("link", { name: "Slack refuses" }).count()).toBe(1);
    expect(await failed.textContent()).toBe("1 failed");
    const row = page.locator("tr", { has: mark });
    expect(await row.getByRole("link", { name: "Prices as a feed" }).count()).toBe(1);
    const message = page.getByTestId("trigger-error-message");
    expect(await message.isVisible()).toBe(false);
    await mark.hover();
    await message.waitFor({ state: "visible" });
    expect(await message.textContent()).toMatch(/feed|RSS|Atom|XML/i);
    // "Needs attention" lists it and not the healthy one.
    await page.getByLabel("Status").selectOption("attention");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/status=attention/);
    await page.getByTestId("trigger-error-mark").waitFor();
    expect(await page.getByRole("link", { name: "A healthy webhook" }).count()).toBe(0);
    await page.getByTestId("trigger-error-mark").hover();
    await page.getByTestId("trigger-error-message").waitFor({ state: "visible" });
    await screenshot(page, "18-applets-trigger-error");
    // A phone: no hover; a tap shows the message.
    await page.goto("/");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.mouse.move(0, 0);
    await page.getByTestId("trigger-error-mark").click();
    await page.getByTestId("trigger-error-message").waitFor({ state: "visible" });
    await screenshot(page, "18-applets-trigger-error-390");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 180_000);

  it("stop the worker and the banner appears within the heartbeat window; start it and the banner goes, without a reload", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    await page.goto("/settings");
    await page.getByTestId("health-panel").waitFor();
    expect(await page.getByTestId("banner-worker").count()).toBe(0);
    await screenshot(page, "18-settings-health");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId("health-panel").scrollIntoViewIfNeeded();
    await screenshot(page, "18-settings-health-390");
    await page.setViewportSize({ width: 1280, height: 900 });

    await page.goto("/runs");
    await s.app.stopWorker();
    // Stale after 4 s, looked at every second: well inside the wait below, no reload.
    await page.getByTestId("banner-worker").filter({ hasText: /The worker has not been seen for \d+ s: .*nothing executes\. Start it with pnpm worker \/ check the worker container\./ }).waitFor({ timeout: 30_000 });
    await screenshot(page, "18-banner-worker-stopped");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "18-banner-worker-stopped-390");

    s.app.startWorker();
    await page.getByTestId("health-banner").waitFor({ state: "detached", timeout: 120_000 });
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);
});
