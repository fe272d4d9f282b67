import { afterEach, describe, expect, test } from "vitest";
import { mqttAction } from "@/lib/actions/mqtt";
import { ActionError } from "@/lib/core/errors";
import { createListeners, type Listeners } from "@/lib/listeners";
import { mqttClientId, mqttTrigger } from "@/lib/triggers/mqtt";
import { pollContext } from "@/lib/triggers/context";
import { createActionContext } from "../helpers/action-context";
import { createTestApp, eventsOf, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { TEST_MQTT_URL, noMosquittoBinary, noMqtt, startMosquittoWithAccount, testClient, uniqueTopic } from "../helpers/mqtt";
import { until } from "../helpers/wait";

/**
 * The MQTT trigger and action against a real broker (the machine's Mosquitto, TEST_MQTT_URL): a
 * message fires with its JSON payload and topic; one published while no worker runs fires after
 * one starts (persistent session, QoS 1); of two workers one subscribes and a message fires once;
 * a payload over the limit is a refused run; a broker that refuses is the trigger's error; the
 * action publishes what it rendered.
 */

/** Waits that end only when the listener stops: no back-off passes by itself in these tests. */
const neverSleep = (_ms: number, signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));

function mqttDefinition(topic: string, extra: Record<string, unknown> = {}) {
  return {
    version: 1,
    trigger: { type: "mqtt", config: { broker_url: TEST_MQTT_URL, topic, ...extra } },
    actions: [{ type: "http", config: { url: "https://hooks.example.com/mqtt", method: "POST", body: { t: "{{trigger.payload.temperature}}" } } }],
  };
}

interface EventRow {
  payload: Record<string, unknown>;
  status: string;
  error: string | null;
}

async function events(app: TestApp, appletId: string): Promise<EventRow[]> {
  const rows = [];
  for (const e of await eventsOf(app.store, appletId)) {
    for (const { id } of await app.store.runs.ofEvent(e.id, 100)) {
      const run = (await app.store.runs.get(id))!;
      rows.push({ payload: e.payload, status: run.status, error: run.error });
    }
  }
  return rows;
}

const subscribed = async (app: TestApp, id: string) => (await app.store.triggerState.get(id))?.lastValue != null;

describe.skipIf(noMqtt)("MQTT trigger against Mosquitto", () => {
  let app: TestApp;
  let running: Listeners[] = [];
  const listen = (holder: string, on: TestApp = app) => {
    const l = createListeners(on, { holder, sleep: neverSleep });
    running.push(l);
    return l;
  };
  afterEach(async () => {
    await Promise.all(running.map((l) => l.stop()));
    running = [];
    await app?.cleanup();
  });

  test("a message on a topic the filter matches fires with its JSON payload, topic and levels", async () => {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const base = uniqueTopic("home");
    const applet = await app.applets.create({ name: "temperatures", definition: mqttDefinition(`${base}/+/temperature`) });
    await listen("w1").reconcile();
    await until(() => subscribed(app, applet.id), "the subscription");
    const pub = await testClient();
    await pub.publishAsync(`${base}/kitchen/temperature`, JSON.stringify({ temperature: 21.5 }), { qos: 1 });
    await pub.publishAsync(`${base}/kitchen/humidity`, "40", { qos: 1 });
    await pub.publishAsync(`${base}/cellar/temperature`, "cold", { qos: 1 });
    await pub.endAsync();
    await until(async () => (await events(app, applet.id)).length === 2, "two events");
    const [first, second] = await events(app, applet.id);
    expect(first!.payload).toMatchObject({ topic: `${base}/kitchen/temperature`, payload: { temperature: 21.5 }, qos: 1, retain: false });
    expect((first!.payload.topic_levels as string[]).slice(-2)).toEqual(["kitchen", "temperature"]);
    expect(second!.payload).toMatchObject({ topic: `${base}/cellar/temperature`, payload: "cold", payload_text: "cold" });
  });

  test("a message published while no worker is running fires once a worker starts", async () => {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const topic = uniqueTopic("door");
    const applet = await app.applets.create({ name: "door", definition: mqttDefinition(topic) });
    const first = listen("w1");
    await first.reconcile();
    await until(() => subscribed(app, applet.id), "the subscription");
    await first.stop();
    // The worker is gone; its session stays at the broker.
    const pub = await testClient();
    await pub.publishAsync(topic, "opened while you were away", { qos: 1 });
    await pub.endAsync();
    expect(await events(app, applet.id)).toHaveLength(0);
    await listen("w2").reconcile();
    await until(async () => (await events(app, applet.id)).length === 1, "the message kept by the broker");
    expect((await events(app, applet.id))[0]!.payload).toMatchObject({ payload: "opened while you were away" });
  });

  test("a changed topic moves the subscription: the old topic no longer fires, the new one does", async () => {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const [before, after] = [uniqueTopic("before"), uniqueTopic("after")];
    const applet = await app.applets.create({ name: "moved", definition: mqttDefinition(before) });
    const l = listen("w1");
    await l.reconcile();
    await until(() => subscribed(app, applet.id), "the first subscription");
    await app.applets.update(applet.id, { definition: mqttDefinition(after) });
    await l.reconcile();
    await until(async () => ((await app.store.triggerState.get(applet.id))?.lastValue as { subscribed?: string } | null)?.subscribed === after, "the new subscription");
    const pub = await testClient();
    await pub.publishAsync(before, "old", { qos: 1 });
    await pub.publishAsync(after, "new", { qos: 1 });
    await pub.endAsync();
    await until(async () => (await events(app, applet.id)).length >= 1, "the event");
    // One more message on the new topic: when it is in, anything from the old one would be too.
    const pub2 = await testClient();
    await pub2.publishAsync(after, "newer", { qos: 1 });
    await pub2.endAsync();
    await until(async () => (await events(app, applet.id)).length >= 2, "the second event");
    expect((await events(app, applet.id)).map((e) => e.payload.payload)).toEqual(["new", "newer"]);
  });

  test("a worker whose lock another took over (it stalled past the TTL) closes its connection; the message fires once", async () => {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const topic = uniqueTopic("takeover");
    const applet = await app.applets.create({ name: "takeover", definition: mqttDefinition(topic) });
    const stalled = listen("stalled");
    await stalled.reconcile();
    await until(() => subscribed(app, applet.id), "the subscription");
    // Its lock ran out while it was stalled: the other worker takes the applet. (No store method
    // ages a lock; the row a stalled worker leaves, written directly.)
    await app.sql.run("UPDATE job_locks SET expires_at = ? WHERE name = ?", "2000-01-01T00:00:00.000Z", `listen:${applet.id}`);
    const other = listen("other");
    await other.reconcile();
    expect(other.held()).toEqual([applet.id]);
    await stalled.reconcile();
    expect(stalled.held()).toEqual([]);
    const pub = await testClient();
    await pub.publishAsync(topic, "once", { qos: 1 });
    await pub.endAsync();
    await until(async () => (await events(app, applet.id)).length >= 1, "the event");
    await other.reconcile();
    expect(await events(app, applet.id)).toHaveLength(1);
  });

  test("a payload over the webhook size limit is recorded as a refused run, not stored whole", async () => {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const topic = uniqueTopic("big");
    const applet = await app.applets.create({ name: "big", definition: mqttDefinition(topic) });
    await listen("w1").reconcile();
    await until(() => subscribed(app, applet.id), "the subscription");
    const pub = await testClient();
    await pub.publishAsync(topic, Buffer.alloc(1024 * 1024 + 10, "x"), { qos: 1 });
    await pub.endAsync();
    await until(async () => (await events(app, applet.id)).length === 1, "the refused event");
    const [e] = await events(app, applet.id);
    expect(e!.status).toBe("skipped");
    expect(e!.error).toMatch(/refused: the payload is 1048586 bytes, over the 1048576 byte limit/);
    expect(e!.payload).toMatchObject({ topic, size: 1048586, payload: null });
  });

  test("a broker that refuses the connection is the trigger's error", async () => {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const applet = await app.applets.create({ name: "down", definition: mqttDefinition("a/b", { broker_url: "mqtt://127.0.0.1:1" }) });
    await listen("w1").reconcile();
    await until(async () => ((await app.store.triggerState.get(applet.id))?.errorCount ?? 0) === 1, "the error");
    expect((await app.store.triggerState.get(applet.id))!.lastError).toBe("mqtt: the broker at mqtt://127.0.0.1:1 refused the connection (nothing listens on that port)");
  });

  test("a broker on a private address is refused unless ALLOW_PRIVATE_URLS", async () => {
    app = createTestApp();
    const applet = await app.applets.create({ name: "private", definition: mqttDefinition("a/b") });
    await listen("w1").reconcile();
    await until(async () => ((await app.store.triggerState.get(applet.id))?.errorCount ?? 0) === 1, "the error");
    expect((await app.store.triggerState.get(applet.id))!.lastError).toMatch(/^mqtt: refusing to connect to 127\.0\.0\.1: a private, loopback or link-local address \(set ALLOW_PRIVATE_URLS=true/);
  });

  test("deleting the applet ends its session at the broker", async () => {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const applet = await app.applets.create({ name: "gone", definition: mqttDefinition(uniqueTopic("gone")) });
    const l = listen("w1");
    await l.reconcile();
    await until(() => subscribed(app, applet.id), "the subscription");
    await app.applets.delete(applet.id);
    await l.reconcile();
    expect(l.held()).toEqual([]);
    // Connecting as the applet's client id without a clean session finds no session left.
    const probe = await testClient(TEST_MQTT_URL);
    await probe.endAsync();
    const { connectAsync } = await import("mqtt");
    const again = await connectAsync(TEST_MQTT_URL, { clientId: mqttClientId(applet.id), clean: false, reconnectPeriod: 0 });
    const present = await new Promise<boolean>((resolve) => {
      // connectAsync resolved after CONNACK; its flags are on the stored packet.
      resolve(Boolean((again as unknown as { connackPacket?: { sessionPresent?: boolean } }).connackPacket?.sessionPresent));
    });
    await again.endAsync(true);
    expect(present).toBe(false);
  });

  test.skipIf(noMosquittoBinary)("a wrong password is the trigger's error in the broker's words, without the password; Test connection says the same", async () => {
    const broker = await startMosquittoWithAccount("ha", "right-password");
    try {
      app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
      await app.secrets.set("MQTT_PASSWORD", "wrong-password-7c1d");
      const applet = await app.applets.create({ name: "bad login", definition: mqttDefinition("a/b", { broker_url: broker.url, username: "ha", password: "{{secrets.MQTT_PASSWORD}}" }) });
      await listen("w1").reconcile();
      await until(async () => ((await app.store.triggerState.get(applet.id))?.errorCount ?? 0) === 1, "the error");
      const error = (await app.store.triggerState.get(applet.id))!.lastError!;
      expect(error).toMatch(new RegExp(`^mqtt: the broker at ${broker.url} (refused the user name or password|refused: not authorized) \\(Connection refused: (Bad username or password|Not authorized)\\)$`));
      expect(error).not.toContain("wrong-password-7c1d");
      const config = mqttTrigger.configSchema.parse({ broker_url: broker.url, username: "ha", password: "{{secrets.MQTT_PASSWORD}}", topic: "a/b" });
      const ctx = pollContext(app);
      await expect(mqttTrigger.preview!(config, ctx)).rejects.toThrow(/refused/);
      await app.secrets.set("MQTT_PASSWORD", "right-password");
      const ok = (await mqttTrigger.preview!(config, pollContext(app))) as { connected: boolean; summary: string };
      expect(ok.connected).toBe(true);
      expect(ok.summary).toContain(`Connected to ${broker.url} as ha and subscribed to a/b`);
    } finally {
      await broker.stop();
    }
  });
});

forEachEngine((engine) => {
  describe.skipIf(noMqtt)(`MQTT trigger with two workers (${engine.name})`, () => {
    test("only one worker subscribes, and a message fires once", async () => {
      const a = createTestApp({ engine, env: { ALLOW_PRIVATE_URLS: "true" } });
      const b = createTestApp({ peerOf: a, env: { ALLOW_PRIVATE_URLS: "true" } });
      const one = createListeners(a, { holder: "worker-a", sleep: neverSleep });
      const two = createListeners(b, { holder: "worker-b", sleep: neverSleep });
      try {
        const topic = uniqueTopic("two");
        const applet = await a.applets.create({ name: "two workers", definition: mqttDefinition(topic) });
        await Promise.all([one.reconcile(), two.reconcile()]);
        expect([...one.held(), ...two.held()]).toEqual([applet.id]);
        await until(() => subscribed(a, applet.id), "the subscription");
        const pub = await testClient();
        await pub.publishAsync(topic, "{}", { qos: 1 });
        await pub.endAsync();
        await until(async () => (await events(a, applet.id)).length >= 1, "the event");
        await Promise.all([one.reconcile(), two.reconcile()]);
        expect(await events(a, applet.id)).toHaveLength(1);
      } finally {
        await Promise.all([one.stop(), two.stop()]);
        await b.cleanup().catch(() => undefined);
        await a.cleanup();
      }
    });
  });
});

describe.skipIf(noMqtt)("MQTT publish action against Mosquitto", () => {
  test("publishes the rendered payload with QoS and retain", async () => {
    const topic = uniqueTopic("out");
    const watcher = await testClient();
    const got = new Promise<{ payload: string; retain: boolean; qos: number }>((resolve) => watcher.on("message", (_t, payload, packet) => resolve({ payload: payload.toString(), retain: packet.retain, qos: packet.qos })));
    await watcher.subscribeAsync(topic, { qos: 1 });
    const config = mqttAction.configSchema.parse({ broker_url: TEST_MQTT_URL, topic, payload: '{"state":"ON"}', qos: 1, retain: false });
    const result = await mqttAction.run(config, { ...createActionContext(), config: { ...createActionContext().config, allowPrivateUrls: true } });
    expect(result.output).toEqual({ status: "published", topic, qos: 1, retain: false, bytes: 14 });
    expect(await got).toEqual({ payload: '{"state":"ON"}', retain: false, qos: 1 });
    await watcher.endAsync();
  });

  test("a broker that is down is a retryable failure; a private broker without ALLOW_PRIVATE_URLS is final", async () => {
    const down = mqttAction.configSchema.parse({ broker_url: "mqtt://127.0.0.1:1", topic: "a", payload: "x" });
    const err = await mqttAction.run(down, { ...createActionContext(), config: { ...createActionContext().config, allowPrivateUrls: true } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActionError);
    expect((err as ActionError).retryable).toBe(true);
    const priv = await mqttAction.run(down, createActionContext()).catch((e: unknown) => e);
    expect((priv as ActionError).retryable).toBe(false);
    expect((priv as ActionError).message).toMatch(/refusing to connect to 127\.0\.0\.1/);
  });
});
