import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { startTimedSweeper, sweepPlannedRuns } from "@/lib/timed/sweep";
import { createTestApp, runningCount, runsOf, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { sentTo, useHttpMocks } from "../helpers/http";
import { spawnWorkerProcess, type WorkerProcess } from "../helpers/processes";
import { until } from "../helpers/wait";
import { startWorker } from "../helpers/worker";

useHttpMocks();

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const waitApplet = (url: string, at: string) => ({
  version: 1,
  trigger: { type: "webhook", config: {} },
  actions: [{ type: "http", config: { url, method: "POST", body: { n: "{{trigger.body.n}}" } }, timing: { at } }],
});

/** Records every request; the first one is never answered (the worker dies holding it), the rest get 200. */
async function startHangingOnce() {
  const seen: { key: string | undefined; body: string }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ key: req.headers["idempotency-key"] as string | undefined, body: Buffer.concat(chunks).toString() });
      if (seen.length === 1) return;
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/remind`,
    seen,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

describe("durable timed runs", () => {
  test("a worker killed (SIGKILL) while a timed run is in flight: the next worker completes it once, with the same idempotency key (the planned run's id)", async () => {
    const app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" }, start: new Date().toISOString() });
    cleanups.push(() => app.cleanup());
    const target = await startHangingOnce();
    cleanups.push(() => target.close());
    const applet = await app.applets.create({ name: "wait then call", definition: waitApplet(target.url, "0") });
    await app.applets.test(applet.id, { body: { n: 7 } });
    const [planned] = await app.store.plannedRuns.list(applet.id, { limit: 5 });
    expect(planned).toMatchObject({ status: "pending" });
    const env = { DATA_DIR: app.dataDir, ALLOW_PRIVATE_URLS: "true", WORKER_LEASE_SECONDS: "2", WORKER_CONCURRENCY: "2" };
    const lines = (w: WorkerProcess) => () => w.lines.slice(-10).join("\n");

    const first = spawnWorkerProcess(env);
    cleanups.push(() => first.kill());
    // Swept, dispatched, and its request is on the wire (never answered).
    await until(() => target.seen.length >= 1, "the first worker to send the timed run", 60_000, lines(first));
    first.child.kill("SIGKILL");
    expect(await first.exited).toBeNull();
    expect(await app.store.plannedRuns.get(planned!.id)).toMatchObject({ status: "done" });
    expect(await app.store.runs.get(planned!.id)).toMatchObject({ status: "running" });

    const second = spawnWorkerProcess(env);
    cleanups.push(() => second.kill());
    await until(async () => (await app.store.runs.get(planned!.id))?.status === "succeeded", "the second worker to finish the timed run", 60_000, lines(second));
    const run = (await app.store.runs.get(planned!.id))!;
    expect(run).toMatchObject({ status: "succeeded", attempt: 1, plannedRunId: planned!.id, actionIndex: 0 });
    expect(target.seen).toHaveLength(2);
    expect(target.seen.map((s) => s.key)).toEqual([planned!.id, planned!.id]);
    // One run row for the planned run, one planned run, executed to the end once.
    const rows = sqliteOf(app.store).prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM runs WHERE planned_run_id = ?").get(planned!.id)!;
    expect(rows.n).toBe(1);
    // Reclaimed by whichever check saw it first: the lease ran out, or the process was found gone.
    expect(second.lines.some((l) => /requeued runs whose worker's (lease expired|process or database session is gone)/.test(l)), lines(second)()).toBe(true);
    await second.waitFor(/worker started/, 60_000);
    second.child.kill("SIGTERM");
    expect(await second.exited, lines(second)()).toBe(0);
  }, 180_000);

  test("a wait of 10 minutes survives a restart (injected clock) and holds no worker slot while it waits", async () => {
    const first: TestApp = createTestApp({ start: "2026-03-07T12:00:00.000Z" });
    cleanups.push(() => first.cleanup());
    const applet = await first.applets.create({ name: "wait 10 min", definition: waitApplet("https://status.test/status/200", "10m") });
    const { eventId } = await first.applets.test(applet.id, { body: { n: 1 } });
    const [planned] = await first.store.plannedRuns.list(applet.id, { limit: 5 });
    expect(new Date(planned!.dueAt).toISOString()).toBe("2026-03-07T12:10:00.000Z");
    const worker = startWorker(first);
    const sweeper = startTimedSweeper({ app: first, intervalMs: 5, onDispatched: () => worker.loop.wake() });
    await worker.drain();
    first.clock.set("2026-03-07T12:05:00.000Z");
    await sweepPlannedRuns({ app: first });
    await worker.drain();
    // Five minutes in: waiting as a row, nothing running, nothing sent.
    expect(await first.store.runs.get(planned!.id)).toMatchObject({ status: "planned" });
    expect(await runningCount(first.store, first.clock.now())).toBe(0);
    expect(sentTo("status")).toHaveLength(0);
    // The process stops (the worker and its sweeper, then the database).
    await sweeper.stop();
    await worker.stop();
    await first.store.close();

    // A new process on the same data, its clock past the due time.
    const second = createTestApp({ dataDir: first.dataDir, start: "2026-03-07T12:11:00.000Z" });
    cleanups.push(() => second.store.close());
    const worker2 = startWorker(second);
    cleanups.push(() => worker2.stop());
    const sweeper2 = startTimedSweeper({ app: second, intervalMs: 5, onDispatched: () => worker2.loop.wake() });
    cleanups.push(() => sweeper2.stop());
    await until(async () => (await second.store.runs.get(planned!.id))?.status === "succeeded", "the wait to end and its action to run");
    expect(sentTo("status")).toHaveLength(1);
    expect(sentTo("status")[0]!.headers["idempotency-key"]).toBe(planned!.id);
    expect((await second.store.runs.get(planned!.id))!.eventId).toBe(eventId);
  }, 60_000);
});

forEachEngine((engine) => {
  test("two workers sweeping at once dispatch each due planned run once", async () => {
    const a = createTestApp({ engine, start: "2026-03-07T12:00:00.000Z" });
    cleanups.push(() => a.cleanup());
    const b = createTestApp({ peerOf: a, start: "2026-03-07T12:00:00.000Z" });
    cleanups.push(() => b.store.close());
    const applet = await a.applets.create({ name: "many", definition: waitApplet("https://status.test/status/200", "1m") });
    for (let n = 0; n < 40; n++) await a.applets.test(applet.id, { body: { n } });
    a.clock.set("2026-03-07T12:02:00.000Z");
    b.clock.set("2026-03-07T12:02:00.000Z");
    const [ra, rb] = await Promise.all([sweepPlannedRuns({ app: a, limit: 5 }), sweepPlannedRuns({ app: b, limit: 5 })]);
    expect(ra.done + rb.done).toBe(40);
    expect(ra.lost + rb.lost).toBe(0);
    const queued = (await runsOf(a.store)).filter((r) => r.plannedRunId !== null && r.status === "queued");
    expect(new Set(queued.map((r) => r.id)).size).toBe(40);
    expect((await a.store.plannedRuns.list(applet.id, { status: "done", limit: 100 })).length).toBe(40);
  });
});
