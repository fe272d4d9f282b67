import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SKIP_REASON, hasChromium, launchBrowser, screenshot, signedInPage, startApp, type RunningApp } from "./harness";

/**
 * "Test without sending" and "Retry from step" in a real browser against the real app and worker:
 * the applet page's dry run shows each recorded request (the token redacted) and the note it would
 * write, and the sink sees nothing; a run failed at its third action is retried from that step on
 * its page, and the sink sees only the third action again. Screenshots at 1280 and 390 px
 * (SHOTS_DIR, else tests/e2e/screenshots).
 */
if (!hasChromium) console.warn(`tests/e2e/dry-run.test.ts skipped: ${SKIP_REASON}`);

const SHOTS = process.env.SHOTS_DIR;

describe.skipIf(!hasChromium)("dry run and retry from a step", () => {
  let app: RunningApp | undefined;
  let browser: Browser | undefined;
  let sink: Server;
  let sinkUrl = "";
  const received: string[] = [];
  let thirdStatus = 400;

  beforeAll(async () => {
    sink = createServer((req, res) => {
      const name = (req.url ?? "").slice(1);
      received.push(name);
      req.resume();
      res.writeHead(name === "c" ? thirdStatus : 200, { "content-type": "application/json" }).end("{}");
    });
    await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
    sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
    app = await startApp();
    browser = await launchBrowser();
  }, 420_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    sink?.close();
  }, 30_000);

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

  it("the dry run shows the requests and the note, sending nothing; retry from the failed step sends only that step again", async () => {
    const { page, errors } = await signedInPage(browser!, app!);
    await request(page, "post", "/api/secrets", { name: "SHOP_TOKEN", value: "shop-token-do-not-show" }).catch(() => undefined);
    const send = (id: string) => ({ id, type: "http", config: { url: `${sinkUrl}/${id}`, method: "POST", headers: { Authorization: "Bearer {{secrets.SHOP_TOKEN}}" }, body: { step: id, title: "{{trigger.body.title}}" } } });
    const { applet } = await request<{ applet: { id: string } }>(page, "post", "/api/applets", {
      name: "Orders, three calls",
      definition: {
        version: 2,
        trigger: { type: "webhook", config: {} },
        steps: [send("a"), send("b"), send("c"), { id: "jot", type: "note", config: { folder: "orders", filename: "{{trigger.body.title}}.md", content: "# {{trigger.body.title}}" } }],
      },
    });

    await page.goto(`/applets/${applet.id}#dry-run`);
    const dry = page.getByTestId("dry-run");
    // A click before hydration does nothing (a plain button): click until the answer shows.
    await expect
      .poll(
        async () => {
          if (await page.getByTestId("dry-run-result").isVisible()) return true;
          await dry.getByRole("button", { name: "Test without sending" }).click();
          return page.getByTestId("dry-run-result").isVisible();
        },
        { timeout: 240_000, interval: 5_000 },
      )
      .toBe(true);
    const text = await page.getByTestId("dry-run-result").textContent();
    expect(text).toContain(`POST ${sinkUrl}/a`);
    expect(text).toContain("authorization: [redacted]");
    expect(text).toMatch(/would create orders\/.*\.md/);
    expect(text).not.toContain("shop-token-do-not-show");
    expect(received).toEqual([]);
    await page.getByTestId("dry-run-result").scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await page.getByTestId("dry-run").screenshot({ path: path.join(SHOTS ?? "tests/e2e/screenshots", "dry-run-result-1280.png") });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    await page.getByTestId("dry-run").screenshot({ path: path.join(SHOTS ?? "tests/e2e/screenshots", "dry-run-result-390.png") });
    await page.setViewportSize({ width: 1280, height: 900 });

    const { run_id } = await request<{ run_id: string }>(page, "post", `/api/applets/${applet.id}/test`, { body: { title: "Lamp" } });
    // The run page's first request compiles it (Next dev): slow on a busy machine.
    await page.goto(`/runs/${run_id}`, { timeout: 240_000 });
    await expect.poll(async () => (await page.getByTestId("run-status").textContent()) ?? "", { timeout: 30_000 }).toMatch(/failed/);
    await page.reload();
    await page.getByTestId("retry-from-step").waitFor();
    expect(await page.locator("#retry-from").inputValue()).toBe("c");
    expect(received).toEqual(["a", "b", "c"]);
    await shot(page, "retry-from-step-1280");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    await shot(page, "retry-from-step-390");
    await page.setViewportSize({ width: 1280, height: 900 });

    thirdStatus = 200;
    await page.getByRole("button", { name: "Retry from here" }).click();
    await expect.poll(async () => (await page.request.get(`/api/runs/${run_id}`).then((r) => r.json())) as { run: { status: string } }, { timeout: 30_000 }).toMatchObject({ run: { status: "succeeded" } });
    expect(received).toEqual(["a", "b", "c", "c"]);
    expect(errors).toEqual([]);
  }, 300_000);
});
