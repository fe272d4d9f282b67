import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { connectAsync } from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noDovecot, startDovecot, type Dovecot } from "../helpers/dovecot";
import { TEST_MQTT_URL, noMqtt, uniqueTopic } from "../helpers/mqtt";
import { until } from "../helpers/wait";
import { SCREENSHOTS, SKIP_REASON, hasChromium, launchBrowser, screenshot, signedInPage, startApp, type RunningApp } from "./harness";

/**
 * A mailbox and a broker through the editor, in a real browser against the real app (server.ts +
 * worker): an IMAP applet and an MQTT applet made with "Test connection" (a refusal first, in the
 * server's words, then what the server holds), saved, and fired by a real Dovecot and Mosquitto.
 * Screenshots at 1280 and 390 px under tests/e2e/screenshots/.
 */
if (!hasChromium) console.warn(`tests/e2e/reach.test.ts skipped: ${SKIP_REASON}`);

const mail = (subject: string) =>
  `From: Ada Lovelace <ada@example.com>\nTo: me@example.com\nSubject: ${subject}\nMessage-ID: <${subject.replace(/\W+/g, "-")}-${Date.now()}@example.com>\nDate: Sat, 07 Mar 2026 12:00:00 +0000\nContent-Type: text/plain\n\nPlease find it attached.\n`;

describe.skipIf(!hasChromium)("mailboxes and brokers in the editor", () => {
  let app: RunningApp | undefined;
  let browser: Browser | undefined;
  let dovecot: Dovecot | undefined;

  beforeAll(async () => {
    if (!noDovecot) dovecot = await startDovecot();
    app = await startApp();
    browser = await launchBrowser();
  }, 420_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await dovecot?.stop();
  }, 30_000);

  /** The page at 1280 and 390 px; with `part`, that element alone too. */
  const both = async (page: Page, name: string, part?: string) => {
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 1280 ? 900 : 844 });
      const suffix = width === 1280 ? "" : "-390";
      await screenshot(page, `${name}${suffix}`);
      if (part) await page.getByTestId(part).screenshot({ path: path.join(SCREENSHOTS, `${name}-${part}${suffix}.png`) });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  };

  const eventsOf = async (page: Page, id: string) => ((await (await page.request.get(`/api/applets/${id}/events`)).json()) as { events: { payload: Record<string, unknown> }[] }).events;

  it.skipIf(noDovecot)("an IMAP applet: Test connection says a wrong password in the server's words, then shows the mailbox; saved, a delivered mail fires it", async () => {
    const server = dovecot!;
    const { page, errors } = await signedInPage(browser!, app!);
    expect((await page.request.post("/api/secrets", { data: { name: "IMAP_PASSWORD", value: "not-the-password" } })).status()).toBe(201);

    await page.goto("/applets/new");
    await page.getByTestId("trigger-card-imap").click();
    await page.locator("#trigger-host").fill(server.host);
    await page.locator("#trigger-port").fill(String(server.port));
    await page.locator("#trigger-tls").selectOption("none");
    await page.locator("#trigger-user").fill(server.user);
    await page.locator("#trigger-password").fill("{{secrets.IMAP_PASSWORD}}");
    await page.locator("#trigger-subject_contains").fill("Invoice");

    await page.getByRole("button", { name: "Test connection" }).click();
    const refused = page.getByTestId("fetch-error");
    await refused.filter({ hasText: "refused the user name or password" }).waitFor();
    expect(await refused.textContent()).not.toContain("not-the-password");
    await both(page, "reach-01-imap-test-refused", "fetch-error");

    // The right password, and a mail already there: Test connection shows it and changes nothing.
    expect((await page.request.post("/api/secrets", { data: { name: "IMAP_PASSWORD", value: server.password } })).status()).toBe(201);
    await server.deliver(mail("Invoice March"));
    await page.getByRole("button", { name: "Test connection" }).click();
    const result = page.getByTestId("fetch-result");
    await result.filter({ hasText: `Signed in to ${server.host} as ${server.user}` }).waitFor();
    await result.filter({ hasText: "Invoice March" }).waitFor();
    await both(page, "reach-02-imap-test-connected", "fetch-result");

    await page.getByTestId("action-card-note").click();
    await page.locator("#action0-filename").fill("invoices.md");
    await page.locator("#action0-content").fill("- {{trigger.subject}} from {{trigger.from}}\n");
    await page.locator("#applet-name").fill("Invoices from my mailbox");
    await page.getByRole("button", { name: "Save applet" }).click();
    await page.waitForURL(/\/applets\/[0-9a-f-]{36}$/);
    const id = page.url().split("/").pop()!;

    // The worker takes the applet within its 5 s pass, notes where the mailbox is, and the next mail fires.
    await until(async () => ((await (await page.request.get(`/api/applets/${id}`)).json()) as { applet: { trigger_state?: { last_polled_at?: string | null } } }).applet.trigger_state?.last_polled_at != null, "the worker's connection", 30_000, () => app!.output());
    await server.deliver(mail("Invoice April"));
    await until(async () => (await eventsOf(page, id)).length === 1, "the mail's event", 30_000, () => app!.output());
    expect((await eventsOf(page, id))[0]!.payload).toMatchObject({ subject: "Invoice April", from: "ada@example.com", mailbox: "INBOX" });
    await page.reload();
    await both(page, "reach-03-imap-applet");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);

  it.skipIf(noMqtt)("an MQTT applet: a # in the middle of the topic is refused before connecting, Test connection shows the retained message, and a published message fires it", async () => {
    const { page, errors } = await signedInPage(browser!, app!);
    const base = uniqueTopic("home");
    const pub = await connectAsync(TEST_MQTT_URL, { clientId: `wt-e2e-${Date.now()}`, clean: true, reconnectPeriod: 0 });
    await pub.publishAsync(`${base}/kitchen/temperature`, JSON.stringify({ temperature: 21.5 }), { qos: 1, retain: true });

    await page.goto("/applets/new");
    await page.getByTestId("trigger-card-mqtt").click();
    await page.locator("#trigger-broker_url").fill(TEST_MQTT_URL);
    await page.locator("#trigger-topic").fill(`${base}/#/temperature`);
    await page.getByRole("button", { name: "Test connection" }).click();
    await page.getByTestId("fetch-error").filter({ hasText: '"#" must be the last level on its own' }).waitFor();
    await both(page, "reach-04-mqtt-test-refused", "fetch-error");

    await page.locator("#trigger-topic").fill(`${base}/+/temperature`);
    await page.getByRole("button", { name: "Test connection" }).click();
    const result = page.getByTestId("fetch-result");
    await result.filter({ hasText: `Connected to ${TEST_MQTT_URL}` }).waitFor();
    await result.filter({ hasText: "1 retained message below" }).waitFor();
    await both(page, "reach-05-mqtt-test-connected", "fetch-result");

    await page.getByTestId("action-card-note").click();
    await page.locator("#action0-filename").fill("temperatures.md");
    await page.locator("#action0-content").fill("- {{trigger.topic_levels[2]}}: {{trigger.payload.temperature}}\n");
    await page.locator("#applet-name").fill("Room temperatures");
    await page.getByRole("button", { name: "Save applet" }).click();
    await page.waitForURL(/\/applets\/[0-9a-f-]{36}$/);
    const id = page.url().split("/").pop()!;

    // The retained reading arrives with the new subscription; then a fresh one.
    await until(async () => (await eventsOf(page, id)).length >= 1, "the retained reading", 30_000, () => app!.output());
    await pub.publishAsync(`${base}/cellar/temperature`, JSON.stringify({ temperature: 12 }), { qos: 1 });
    await until(async () => (await eventsOf(page, id)).length >= 2, "the published reading", 30_000, () => app!.output());
    const payloads = (await eventsOf(page, id)).map((e) => e.payload);
    expect(payloads.map((p) => [p.retain, (p.payload as { temperature: number }).temperature]).sort()).toEqual([
      [false, 12],
      [true, 21.5],
    ]);
    // Clear the retained message for the next run.
    await pub.publishAsync(`${base}/kitchen/temperature`, "", { qos: 1, retain: true });
    await pub.endAsync();
    await page.reload();
    await both(page, "reach-06-mqtt-applet");
    expect(errors).toEqual([]);
    await page.context().close();
  }, 240_000);
});
