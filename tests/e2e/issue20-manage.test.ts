import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, SKIP_REASON, hasChromium, launchBrowser, screenshot, signedInPage, startApp, type RunningApp } from "./harness";

/**
 * Issue #20, the rest, in a real browser against the real app: the password change in Settings,
 * runs search and bulk retry, the onboarding examples, tags, the keyboard, and "listen for test
 * event". The password change runs last: it signs out every other session.
 */
if (!hasChromium) console.warn(`tests/e2e/issue20-manage.test.ts skipped: ${SKIP_REASON}`);

describe.skipIf(!hasChromium)("#20: managing applets, runs and the account", () => {
  let app: RunningApp | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    app = await startApp();
    browser = await launchBrowser();
  }, 420_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
  }, 30_000);

  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const post = async <T>(page: Page, path: string, data: unknown): Promise<T> => {
    const res = await page.request.post(path, { data });
    if (!res.ok()) throw new Error(`POST ${path}: ${res.status()} ${await res.text()}`);
    return (await res.json()) as T;
  };

  it("#20: the password is changed in Settings with the current one; another browser is signed out, this one stays", async () => {
    const { page, errors } = await signedInPage(browser!, app!);
    const other = await signedInPage(browser!, app!);
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
