import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { e2eSuite, hasChromium, screenshot, signedInPage, SKIP_REASON } from "./harness";

/**
 * The failure alerts, auto-pause part, in a real browser against the real app and worker: the
 * Settings alert channel refused with its field named, then saved; failing runs alert through it
 * and auto-pause the applet, which the list and the applet page show; a channel failing at send
 * time shows the provider's answer in Settings. Screenshots at 1280 and 390 px.
 */
if (!hasChromium) console.warn(`tests/e2e/alerts.test.ts skipped: ${SKIP_REASON}`);

describe.skipIf(!hasChromium)("failure alerts and auto-pause", () => {
  const s = e2eSuite({ env: { ALERT_DISPATCH_MS: "500" }, fake: true });

  const request = async <T>(page: Page, method: "post" | "put", path: string, data: unknown): Promise<T> => {
    const res = await page.request[method](path, { data });
    if (!res.ok()) throw new Error(`${method.toUpperCase()} ${path}: ${res.status()} ${await res.text()}`);
    return (await res.json()) as T;
  };
  /** Reloads until `check` holds (the worker runs and alerts on its own schedule). */
  const reloadUntil = async (page: Page, check: () => Promise<boolean>) => {
    for (let i = 0; i < 120; i++) {
      if (await check()) return;
      await page.waitForTimeout(500);
      await page.reload();
    }
    throw new Error("the page never showed what the test waited for");
  };

  it("the alert channel is refused with its field named, saved, and a paused applet shows on its page and in the list", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    await page.goto("/settings");
    await page.getByLabel("Channel", { exact: true }).selectOption("slack");
    await page.getByRole("textbox", { name: "Webhook URL" }).fill("ftp://hooks.example.com/x");
    await page.getByLabel("Auto-pause by default").check();
    await page.getByLabel("Auto-pause after").fill("2");
    await page.getByRole("button", { name: "Save alert settings" }).click();
    await page.getByTestId("problem-webhook_url").waitFor();
    expect(await page.getByTestId("problem-webhook_url").textContent()).toMatch(/http/);
    await page.getByRole("textbox", { name: "Webhook URL" }).fill(s.fake.url("/ok/services/T/B/X"));
    await page.getByRole("button", { name: "Save alert settings" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();

    const { applet } = await request<{ applet: { id: string } }>(page, "post", "/api/applets", {
      name: "Orders to CRM",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: s.fake.url("/fail/crm") } }] },
    });
    // A second applet alerting through a channel of its own that refuses every message.
    const { applet: other } = await request<{ applet: { id: string } }>(page, "post", "/api/applets", {
      name: "Newsletter digest",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: s.fake.url("/fail/news") } }] },
    });
    await request(page, "put", `/api/applets/${other.id}/alerts`, { channel: { type: "slack", config: { webhook_url: s.fake.url("/fail/services/T/B/X") } }, auto_pause: "off" });
    for (let i = 0; i < 2; i++) await request(page, "post", `/api/applets/${applet.id}/test`, { body: { order: i } });
    await request(page, "post", `/api/applets/${other.id}/test`, { body: {} });

    await page.goto("/");
    await reloadUntil(page, async () => (await page.getByTestId("paused-mark").count()) === 1);
    expect(await page.getByTestId("paused-mark").textContent()).toMatch(/Paused after 2 failed runs in a row at \d\d:\d\d(?: [A-Za-z+\-0-9:]+)? — fix and enable/);
    await screenshot(page, "18-applets-list-paused-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "18-applets-list-paused-390");

    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`/applets/${applet.id}`);
    await page.getByTestId("paused-banner").waitFor();
    expect(await page.getByRole("switch").getAttribute("aria-checked")).toBe("false");
    await screenshot(page, "18-applet-paused-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "18-applet-paused-390");

    // The failure alert and the pause notice went to the Settings channel; the other applet's own channel refused its alert.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto("/settings");
    await reloadUntil(page, async () => (await page.getByTestId("provider-answer").count()) >= 1 && (await page.getByText("sent", { exact: true }).count()) >= 1);
    expect(await page.getByTestId("provider-answer").first().textContent()).toContain("invalid_payload");
    expect(s.fake.received.filter((r) => r.path.startsWith("/ok/services")).length).toBeGreaterThanOrEqual(1);
    await page.locator("#alerts-h").scrollIntoViewIfNeeded();
    await screenshot(page, "18-settings-alerts-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "18-settings-alerts-390");

    // Enabling clears the pause.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`/applets/${applet.id}`);
    await page.getByRole("switch").click();
    await reloadUntil(page, async () => (await page.getByTestId("paused-banner").count()) === 0);
    expect(errors).toEqual([]);
  }, 300_000);
});
