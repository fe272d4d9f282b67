import { http as mock, passthrough } from "msw";
import { afterEach, beforeEach, expect, test } from "vitest";
import { waitLinks } from "@/lib/waits/links";
import { cancelWaiting } from "@/lib/waits/control";
import { resumeDueWaits } from "@/lib/waits/tick";
import { createTestApp, runningCount, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { sentTo, server, useHttpMocks } from "../helpers/http";
import { until } from "../helpers/wait";
import { serveIngress } from "../helpers/ingress";
import { startWorker } from "../helpers/worker";
import { runDetail } from "@/lib/api/queries";

/**
 * Strict order (controls.order = "strict", docs/definition.md "Order."): a run waiting at a wait step
 * keeps its applet's lane, so the applet's later runs stay queued, in order, until it has resumed
 * through the queue and finished (or was cancelled). Without it a waiting run lets them go. Both
 * engines, the real executor loop, the real resume link on a real port.
 */

useHttpMocks();
beforeEach(() => server.use(mock.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough())));

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const send = (step: string) => ({ id: step, type: "http", config: { url: `https://status.test/status/200?step=${step}`, method: "POST", body: { step: `${step} {{trigger.body.n}}` } } });
const applet = (steps: unknown[], controls?: unknown) => ({ version: 2, trigger: { type: "webhook", config: {} }, steps, ...(controls ? { controls } : {}) });
const sent = () => sentTo("status").map((s) => (JSON.parse(s.body) as { step: string }).step);
const statusOf = async (app: TestApp, runId: string) => (await app.store.runs.get(runId))!.status;

async function serveLinks(app: TestApp) {
  const { base: origin } = await serveIngress(app, cleanups, { waitLinks: true });
  return (url: string, body: string) => fetch(url.replace(app.config.publicUrl, origin), { method: "POST", body, headers: { "content-type": "application/json" } });
}

/** Nothing is running: whatever the worker could take, it has taken. */
const quiet = (app: TestApp) => until(async () => (await runningCount(app.store, app.clock.now())) === 0, "no run running");

forEachEngine((engine) => {
  test("strict order: the applet's second run stays queued until the first run's call came and it finished", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({
      name: "in strict order",
      definition: applet([send("first"), { id: "paid", type: "wait", kind: "for_call", timeout: "1d" }, send("after")], { order: "strict" }),
    });
    const other = await app.applets.create({ name: "another applet", definition: applet([send("other")]) });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());

    const one = await app.applets.test(a.id, { body: { n: 1 } });
    await until(async () => (await statusOf(app, one.runId)) === "waiting", "the first run to wait");
    // Its page says the applet's later runs wait for it.
    expect((await runDetail(app, one.runId))!.applet).toMatchObject({ strict_order: "in_order" });
    app.clock.advance(1000);
    const two = await app.applets.test(a.id, { body: { n: 2 } });
    const elsewhere = await app.applets.test(other.id, { body: { n: 3 } });
    // Another applet's run goes on; this applet's second run is not handed out to anyone.
    await until(async () => (await statusOf(app, elsewhere.runId)) === "succeeded", "the other applet's run");
    await quiet(app);
    expect(await app.store.runs.claim("probe", app.clock.now())).toBeNull();
    expect(await statusOf(app, two.runId)).toBe("queued");
    expect(sent()).toEqual(["first 1", "other 3"]);

    // The call resumes the first run through the queue (its own lane does not block it); the second follows it.
    app.clock.advance(1000);
    const post = await serveLinks(app);
    const called = await post(waitLinks(app.config.publicUrl, app.config.sessionSecret, one.runId, 0).resume_url, '{"ok":true}');
    expect(called.status).toBe(202);
    await until(async () => (await statusOf(app, two.runId)) === "waiting", "the second run to reach its wait");
    expect(await statusOf(app, one.runId)).toBe("succeeded");
    expect(sent()).toEqual(["first 1", "other 3", "after 1", "first 2"]);
    const [r1, r2] = [(await app.store.runs.get(one.runId))!, (await app.store.runs.get(two.runId))!];
    expect(r2.startedAt! >= r1.finishedAt!).toBe(true);
  }, 60_000);

  test("strict order: a wait resumed by the clock goes before the runs queued behind it, in order; a cancelled one lets them go", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({
      name: "an hour apart",
      definition: applet([send("first"), { id: "gate", type: "wait", kind: "delay", duration: "1h" }, send("after")], { order: "strict" }),
    });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    const one = await app.applets.test(a.id, { body: { n: 1 } });
    await until(async () => (await statusOf(app, one.runId)) === "waiting", "the first run to wait");
    const queued: string[] = [];
    for (const n of [2, 3]) {
      app.clock.advance(60_000);
      queued.push((await app.applets.test(a.id, { body: { n } })).runId);
    }
    await quiet(app);
    expect(await app.store.runs.claim("probe", app.clock.now())).toBeNull();

    // The hour passes: the first run is queued again behind runs due long before its resume, and still goes first.
    app.clock.advance(3_600_000);
    expect(await resumeDueWaits(app)).toBe(1);
    await until(async () => (await statusOf(app, queued[0]!)) === "waiting", "the second run to wait");
    expect(await statusOf(app, queued[1]!)).toBe("queued");
    expect(sent()).toEqual(["first 1", "after 1", "first 2"]);

    // Cancelled, the waiting run lets the next one go.
    expect(await cancelWaiting(app, queued[0]!, "admin@example.com")).toEqual({ ok: true });
    await until(async () => (await statusOf(app, queued[1]!)) === "waiting", "the third run to wait");
    expect(sent()).toEqual(["first 1", "after 1", "first 2", "first 3"]);
  }, 60_000);

  test("strict order per key: a waiting run holds back only the runs of its own key", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({
      name: "per customer",
      definition: applet([send("first"), { id: "gate", type: "wait", kind: "for_call" }, send("after")], {
        concurrency: { mode: "per_key", key: "{{trigger.body.customer}}" },
        order: "strict",
      }),
    });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    const a1 = await app.applets.test(a.id, { body: { n: "a1", customer: "a" } });
    await until(async () => (await statusOf(app, a1.runId)) === "waiting", "a1 to wait");
    expect((await runDetail(app, a1.runId))!.applet).toMatchObject({ strict_order: "per_key" });
    app.clock.advance(1000);
    const a2 = await app.applets.test(a.id, { body: { n: "a2", customer: "a" } });
    const b1 = await app.applets.test(a.id, { body: { n: "b1", customer: "b" } });
    await until(async () => (await statusOf(app, b1.runId)) === "waiting", "b1 to wait");
    await quiet(app);
    expect(await app.store.runs.claim("probe", app.clock.now())).toBeNull();
    expect(await statusOf(app, a2.runId)).toBe("queued");
    expect(sent()).toEqual(["first a1", "first b1"]);
  }, 60_000);

  test("a waiting run's page says what its run decided when it parked, not what the applet was saved with since", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const definition = (controls?: unknown) => applet([send("first"), { id: "paid", type: "wait", kind: "for_call", timeout: "1d" }, send("after")], controls);
    const a = await app.applets.create({ name: "strict, then relaxed", definition: definition({ order: "strict" }) });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    const one = await app.applets.test(a.id, { body: { n: 1 } });
    await until(async () => (await statusOf(app, one.runId)) === "waiting", "the first run to wait");
    await app.applets.update(a.id, { definition: definition() });
    // It still holds the applet's lane: a later run stays queued behind it, and its page says so.
    app.clock.advance(1000);
    const two = await app.applets.test(a.id, { body: { n: 2 } });
    await quiet(app);
    expect(await statusOf(app, two.runId)).toBe("queued");
    expect((await runDetail(app, one.runId))!.applet).toMatchObject({ strict_order: "in_order" });
  }, 60_000);

  test("without strict order (the default) the second run goes first while the first waits", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({ name: "relaxed", definition: applet([send("first"), { id: "paid", type: "wait", kind: "for_call" }, send("after")]) });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    const one = await app.applets.test(a.id, { body: { n: 1 } });
    await until(async () => (await statusOf(app, one.runId)) === "waiting", "the first run to wait");
    const two = await app.applets.test(a.id, { body: { n: 2 } });
    await until(async () => (await statusOf(app, two.runId)) === "waiting", "the second run to wait too");
    expect(await statusOf(app, one.runId)).toBe("waiting");
    expect((await runDetail(app, one.runId))!.applet).toMatchObject({ strict_order: null });
    expect(sent()).toEqual(["first 1", "first 2"]);
  }, 60_000);
});

test("strict order with parallel lanes is refused, naming the field", async () => {
  const app = createTestApp();
  cleanups.push(() => app.cleanup());
  const saved = app.applets.create({
    name: "nonsense",
    definition: applet([send("x")], { concurrency: { mode: "parallel", max: 4 }, order: "strict" }),
  });
  await expect(saved).rejects.toMatchObject({ details: expect.arrayContaining([expect.objectContaining({ path: "definition.controls.order", message: expect.stringContaining('use concurrency "in_order" or "per_key"') })]) });
  const bad = app.applets.create({ name: "typo", definition: applet([send("x")], { order: "strictly" }) });
  await expect(bad).rejects.toMatchObject({ details: [expect.objectContaining({ path: "definition.controls.order", message: "must be relaxed or strict" })] });
});
