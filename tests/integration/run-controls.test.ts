import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { http as mock, HttpResponse, passthrough } from "msw";
import { afterEach, expect, test } from "vitest";
import { storedDefinition, type Definition } from "@/lib/definition";
import { createIngestBatcher, ingest } from "@/lib/queue/ingest";
import { replayRun } from "@/lib/queue/replay";
import { createTestApp, runsOf, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { serveIngress } from "../helpers/ingress";
import { server as mocks, useHttpMocks } from "../helpers/http";
import { spawnWorkerProcess } from "../helpers/processes";
import { startWorker } from "../helpers/worker";

/** An applet's runs in the order they started (then created), each with its event's payload, through the store. */
async function byStart(app: TestApp, appletId: string) {
  const runs = (await runsOf(app.store, appletId)).sort((a, b) => (a.startedAt ?? "").localeCompare(b.startedAt ?? ""));
  return Promise.all(runs.map(async (r) => ({ ...r, payload: (await app.store.runs.event(r.eventId))!.payload })));
}

/**
 * Controls over runs (lib/definition/controls.ts) on both engines: concurrency per key with four
 * real worker processes, and a rate limit and a debounce under an injected clock with four worker
 * loops (each its own connection).
 */

useHttpMocks();

const KEY = Buffer.alloc(32, 7).toString("base64");
const MINUTE = 60_000;

/** The http action's endpoint: holds each request a few ms and counts what is in flight, per key and in all. */
async function startSink() {
  const bodies: { key: string; n: number }[] = [];
  const overlaps: string[] = [];
  const inFlight = new Map<string, number>();
  let total = 0;
  let maxTotal = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { key: string; n: number };
      bodies.push(body);
      const n = (inFlight.get(body.key) ?? 0) + 1;
      inFlight.set(body.key, n);
      if (n > 1) overlaps.push(`${body.key} #${body.n}`);
      maxTotal = Math.max(maxTotal, ++total);
      setTimeout(() => {
        inFlight.set(body.key, inFlight.get(body.key)! - 1);
        total--;
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      }, 4);
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    bodies,
    overlaps,
    maxInFlight: () => maxTotal,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

const webhook = (controls: Definition["controls"], url: string, body: Record<string, unknown>): Definition => ({
  version: 2,
  trigger: { type: "webhook", config: {} },
  steps: [{ id: "send", type: "http", config: { url, method: "POST", body } }],
  controls,
});

forEachEngine((engine) => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function setup(start = "2026-03-07T12:00:00.000Z", env: Record<string, string> = {}): TestApp {
    const app = createTestApp({ engine, start, env });
    cleanups.push(() => app.cleanup());
    return app;
  }

  /** Four worker loops, each with its own connection and clock; `at` moves every clock. */
  function fourWorkers(app: TestApp) {
    const apps = [app, ...Array.from({ length: 3 }, () => createTestApp({ peerOf: app, start: app.clock.now().toISOString() }))];
    for (const a of apps.slice(1)) cleanups.push(() => a.cleanup());
    const workers = apps.map((a, i) => startWorker(a, { concurrency: 2, workerId: `w${i}` }));
    cleanups.push(() => Promise.all(workers.map((w) => w.stop())));
    return {
      at: (ms: number) => apps.forEach((a) => a.clock.set(ms)),
      drain: async () => {
        for (const w of workers) await w.drain(30_000);
      },
    };
  }

  test("controls apply to webhooks as the ingress receives them: each run gets its key's lane, a rate limit holds the runs over it, a debounce merges", async () => {
    const start = Date.parse("2026-03-07T12:00:00.000Z");
    const app = setup();
    mocks.use(mock.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough()));
    const { base } = await serveIngress(app, cleanups);
    const paced = await app.applets.create({
      name: "paced per customer",
      definition: webhook({ concurrency: { mode: "per_key", key: "{{trigger.body.customer}}" }, rate_limit: { max: 2, period_seconds: 60, overflow: "wait" } }, "https://sink.test/hook", {}),
    });
    const merged = await app.applets.create({ name: "merged", definition: webhook({ debounce: { window_seconds: 30, keep: "all" } }, "https://sink.test/hook", {}) });
    const post = async (a: typeof paced, body: Record<string, unknown>) => {
      const res = await fetch(`${base}/api/hooks/${a.id}/${a.webhookToken}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(res.status).toBe(202);
      return ((await res.json()) as { run_id: string }).run_id;
    };
    for (let n = 0; n < 4; n++) {
      app.clock.set(start + n * 100);
      await post(paced, { customer: `c${n % 2}`, n });
    }
    // A run's lane is the store's own (no method reads it): from its column.
    const runs = await app.sql.all<{ lane: string; next_attempt_at: string }>("SELECT lane, next_attempt_at FROM runs WHERE applet_id = ? ORDER BY created_at", paced.id);
    expect(runs.map((r) => r.lane)).toEqual(["k:c0", "k:c1", "k:c0", "k:c1"]);
    // Two start at once; the third and fourth wait for their slots a minute after the first two.
    expect(runs.map((r) => r.next_attempt_at)).toEqual(["2026-03-07T12:00:00.000Z", "2026-03-07T12:00:00.100Z", "2026-03-07T12:01:00.000Z", "2026-03-07T12:01:00.100Z"]);
    expect((await app.store.fires.list(paced.id, { outcome: "rate_limited", limit: 10 })).entries).toHaveLength(2);

    const ids = [];
    for (let n = 0; n < 3; n++) {
      app.clock.set(start + 1_000 + n * 100);
      ids.push(await post(merged, { n }));
    }
    expect(new Set(ids).size).toBe(1);
    expect((await app.store.fires.list(merged.id, { outcome: "debounced", limit: 10 })).entries).toHaveLength(2);
  });

  test("concurrency per key: 2,000 runs over 20 keys with four worker processes never overlap within a key, do overlap across keys, and each runs once", async () => {
    const app = setup(new Date().toISOString(), { SECRETS_KEY: KEY, SESSION_SECRET: "session", ALLOW_PRIVATE_URLS: "true" });
    const sink = await startSink();
    cleanups.push(() => sink.close());
    const applet = await app.applets.create({
      name: "per customer",
      definition: webhook({ concurrency: { mode: "per_key", key: "{{trigger.body.customer_id}}" } }, sink.url, { key: "{{trigger.body.customer_id}}", n: "{{trigger.body.n}}" }),
    });
    const definition = storedDefinition(applet.definition);
    const batch = createIngestBatcher(app);
    const ingests = [];
    for (let n = 0; n < 2000; n++) {
      app.clock.set(Date.now());
      ingests.push(batch({ appletId: applet.id, source: "webhook", dedupeKey: null, payload: { body: { customer_id: `c${n % 20}`, n } }, maxAttempts: 5, definition }));
    }
    await Promise.all(ingests);
    // A run's lane is the store's own (no method reads it): from its column.
    const lanes = await app.sql.all<{ lane: string }>("SELECT DISTINCT lane FROM runs WHERE applet_id = ?", applet.id);
    expect(lanes.map((l) => l.lane).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k:c${i}`).sort());

    const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-controls-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const workers = Array.from({ length: 4 }, (_, i) => {
      const w = spawnWorkerProcess({
        DATA_DIR: path.join(dataDir, `w${i}`),
        DATABASE_URL: engine.databaseUrl(app.store),
        DATABASE_POOL_SIZE: "3",
        SECRETS_KEY: KEY,
        SESSION_SECRET: "session",
        ALLOW_PRIVATE_URLS: "true",
        INBOUND_EMAIL: "false",
        WORKER_CONCURRENCY: "4",
        LOG_LEVEL: "warn",
      });
      cleanups.push(() => w.kill());
      return w;
    });
    const deadline = Date.now() + 150_000;
    for (;;) {
      const done = (await app.store.runs.tally("", app.clock.now())).byApplet.filter((t) => t.status === "succeeded").reduce((n, t) => n + t.count, 0);
      if (done === 2000) break;
      if (Date.now() > deadline) throw new Error(`only ${String(done)} of 2,000 runs succeeded`);
      await new Promise((r) => setTimeout(r, 250));
    }
    // Each run once, and never two of one key at the same time (at the sink, and by the runs' own times).
    expect(sink.bodies).toHaveLength(2000);
    expect(new Set(sink.bodies.map((b) => b.n)).size).toBe(2000);
    expect(sink.overlaps).toEqual([]);
    // A run's lane is the store's own (no method reads it): from its column.
    const rows = await app.sql.all<{ lane: string; started_at: string; finished_at: string }>(
      "SELECT lane, started_at, finished_at FROM runs WHERE applet_id = ? ORDER BY lane, started_at, finished_at",
      applet.id,
    );
    let overlapAcross = 0;
    const byTime = [...rows].sort((a, b) => a.started_at.localeCompare(b.started_at));
    for (let i = 1; i < byTime.length; i++) if (byTime[i]!.started_at < byTime[i - 1]!.finished_at && byTime[i]!.lane !== byTime[i - 1]!.lane) overlapAcross++;
    for (let i = 1; i < rows.length; i++) {
      const [prev, r] = [rows[i - 1]!, rows[i]!];
      if (prev.lane === r.lane) expect(r.started_at >= prev.finished_at, `${r.lane}: started ${r.started_at} before the one before finished (${prev.finished_at})`).toBe(true);
    }
    // Different keys ran side by side: seen at the sink and in the stored times.
    expect(sink.maxInFlight()).toBeGreaterThan(1);
    expect(overlapAcross).toBeGreaterThan(0);
    expect(workers.flatMap((w) => w.lines.filter((l) => /^\S+ ERROR /.test(l)))).toEqual([]);
  }, 240_000);

  test("concurrency per key: a replay runs in its event's key's lane (never beside a run of the same key), and a retry stays in its run's lane", async () => {
    const app = setup();
    const applet = await app.applets.create({ name: "per customer", definition: webhook({ concurrency: { mode: "per_key", key: "{{trigger.body.customer_id}}" } }, "https://sink.test/hook", {}) });
    const send = (customer: string) =>
      ingest(app, { appletId: applet.id, source: "webhook", dedupeKey: null, payload: { body: { customer_id: customer } }, maxAttempts: 5, definition: storedDefinition(applet.definition) });
    const first = (await send("acme"))!;
    // A run's lane is the store's own (no method reads it): from its column.
    const laneOfRun = async (id: string) => (await app.sql.all<{ lane: string }>("SELECT lane FROM runs WHERE id = ?", id))[0]!.lane;
    expect(await laneOfRun(first.runId)).toBe("k:acme");
    // acme's run is running; its replay waits behind it, whatever else is free.
    const running = (await app.store.runs.claim("w1", app.clock.now()))!;
    expect(running.id).toBe(first.runId);
    app.clock.advance(1000);
    const replayId = (await replayRun(app, first.runId))!;
    expect(await laneOfRun(replayId)).toBe("k:acme");
    expect(await app.store.runs.claim("w2", app.clock.now())).toBeNull();
    const other = (await send("globex"))!;
    expect((await app.store.runs.claim("w2", app.clock.now()))!.id).toBe(other.runId);
    // Once acme's run is done, its replay is next in acme's lane.
    expect(await app.store.runs.finish(running, "failed", null, "boom", app.clock.now())).toBe(true);
    expect((await app.store.runs.claim("w3", app.clock.now()))!.id).toBe(replayId);
    // A retry is the same run again: it keeps its lane, so it too waits for acme's running replay.
    expect(await app.store.runs.retry(first.runId, app.clock.now())).toBe(true);
    expect(await laneOfRun(first.runId)).toBe("k:acme");
    expect(await app.store.runs.claim("w4", app.clock.now())).toBeNull();
    // Without a lane given, the store keeps the original run's.
    expect(await laneOfRun((await app.store.runs.replay(other.runId, app.clock.now()))!)).toBe("k:globex");
  });

  test("a rate limit of 10 per minute holds over 5 simulated minutes: 50 runs start 10 a minute, in order; with overflow drop the rest are stored skipped and in the ledger", async () => {
    const start = Date.parse("2026-03-07T12:00:00.000Z");
    const app = setup();
    mocks.use(mock.post("https://sink.test/hook", () => HttpResponse.json({ ok: true })));
    const waits = await app.applets.create({ name: "paced", definition: webhook({ rate_limit: { max: 10, period_seconds: 60, overflow: "wait" } }, "https://sink.test/hook", { n: "{{trigger.body.n}}" }) });
    const drops = await app.applets.create({ name: "dropping", definition: webhook({ rate_limit: { max: 10, period_seconds: 60, overflow: "drop" } }, "https://sink.test/hook", { n: "{{trigger.body.n}}" }) });
    const send = async (a: typeof waits, n: number) =>
      ingest(app, { appletId: a.id, source: "webhook", dedupeKey: null, payload: { body: { n } }, maxAttempts: 5, definition: storedDefinition(a.definition) });
    // A burst of 50 in the first second, for each.
    for (let n = 0; n < 50; n++) {
      app.clock.set(start + n * 20);
      await send(waits, n);
      await send(drops, n);
    }
    const workers = fourWorkers(app);
    // Five simulated minutes, ten seconds at a time.
    for (let t = 0; t <= 5 * MINUTE; t += 10_000) {
      workers.at(start + t);
      await workers.drain();
    }
    const runs = await byStart(app, waits.id);
    expect(runs.map((r) => r.status)).toEqual(Array(50).fill("succeeded"));
    const starts = runs.map((r) => Date.parse(r.startedAt!));
    // Never more than 10 starts in any 60 s, and 10 in each of the five minutes.
    for (let i = 0; i + 10 < starts.length; i++) expect(starts[i + 10]! - starts[i]!).toBeGreaterThanOrEqual(MINUTE);
    expect([0, 1, 2, 3, 4].map((m) => starts.filter((s) => s >= start + m * MINUTE && s < start + (m + 1) * MINUTE).length)).toEqual([10, 10, 10, 10, 10]);
    const held = (await app.store.fires.list(waits.id, { outcome: "rate_limited", limit: 100 })).entries;
    expect(held).toHaveLength(40);
    expect(held[0]!.detail).toMatch(/^held by a rate limit \(10 per 1 min\): starts at 2026-03-07T12:04:00/);

    const dropped = await runsOf(app.store, drops.id);
    expect(dropped.filter((r) => r.status === "succeeded")).toHaveLength(10);
    expect(dropped.filter((r) => r.status === "skipped").map((r) => r.error)).toEqual(Array(40).fill("skipped: rate limit (10 per 1 min reached; dropped)"));
    expect((await app.store.fires.list(drops.id, { outcome: "rate_limited", limit: 100 })).entries).toHaveLength(40);
  }, 120_000);

  test("a rate limit after an outage: runs whose slots passed while no worker ran still start at most 2 a minute on restart, and the ledger says they were held again", async () => {
    const start = Date.parse("2026-03-07T12:00:00.000Z");
    const app = setup();
    mocks.use(mock.post("https://sink.test/hook", () => HttpResponse.json({ ok: true })));
    const applet = await app.applets.create({ name: "paced", definition: webhook({ concurrency: { mode: "parallel", max: 4 }, rate_limit: { max: 2, period_seconds: 60, overflow: "wait" } }, "https://sink.test/hook", { n: "{{trigger.body.n}}" }) });
    // Eight events at 12:00 get slots 12:00, 12:00, 12:01, 12:01, … 12:03; no worker is running.
    for (let n = 0; n < 8; n++) {
      app.clock.set(start + n);
      await ingest(app, { appletId: applet.id, source: "webhook", dedupeKey: null, payload: { body: { n } }, maxAttempts: 5, definition: storedDefinition(applet.definition) });
    }
    // The workers come back at 12:10, when every slot has passed.
    const restart = start + 10 * MINUTE;
    app.clock.set(restart);
    const workers = fourWorkers(app);
    for (let t = 0; t <= 5 * MINUTE; t += 5_000) {
      workers.at(restart + t);
      await workers.drain();
    }
    const runs = await byStart(app, applet.id);
    expect(runs.map((r) => r.status)).toEqual(Array(8).fill("succeeded"));
    const starts = runs.map((r) => Date.parse(r.startedAt!));
    for (let i = 0; i + 2 < starts.length; i++) expect(starts[i + 2]! - starts[i]!).toBeGreaterThanOrEqual(MINUTE);
    expect([0, 1, 2, 3].map((m) => starts.filter((s) => s >= restart + m * MINUTE && s < restart + (m + 1) * MINUTE).length)).toEqual([2, 2, 2, 2]);
    // Each event ran once (four parallel lanes: runs due together start in whichever order the workers claim them).
    expect(runs.map((r) => (r.payload as { body: { n: number } }).body.n).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const again = (await app.store.fires.list(applet.id, { outcome: "rate_limited", limit: 100 })).entries.filter((e) => e.detail.includes("again"));
    expect(again.length).toBeGreaterThan(0);
    expect(again.at(-1)!.detail).toMatch(/^held again by the rate limit \(2 per 1 min\): its start time passed while no run started \(the worker was down or busy\); starts at 2026-03-07T12:11:00/);
  }, 120_000);

  test("a debounce of 30 s turns 500 webhooks in 10 s into one run that carries all 500 events in order, and the ledger says each of the others was merged", async () => {
    const start = Date.parse("2026-03-07T12:00:00.000Z");
    const app = setup();
    const bodies: { events: { body: { n: number } }[]; n: number }[] = [];
    mocks.use(
      mock.post("https://sink.test/batch", async ({ request }) => {
        bodies.push((await request.json()) as (typeof bodies)[number]);
        return HttpResponse.json({ ok: true });
      }),
    );
    const applet = await app.applets.create({
      name: "batched",
      definition: webhook({ debounce: { window_seconds: 30, keep: "all" } }, "https://sink.test/batch", { events: "{{trigger.events}}", n: "{{trigger.body.n}}" }),
    });
    const batch = createIngestBatcher(app);
    const results = [];
    for (let n = 0; n < 500; n++) {
      app.clock.set(start + n * 20);
      results.push(await batch({ appletId: applet.id, source: "webhook", dedupeKey: null, payload: { body: { n } }, maxAttempts: 5, definition: storedDefinition(applet.definition) }));
    }
    // Every webhook was told the one run it joined.
    expect(new Set(results.map((r) => r?.runId)).size).toBe(1);
    const workers = fourWorkers(app);
    workers.at(start + 10_000);
    await workers.drain();
    expect(bodies).toHaveLength(0);
    workers.at(start + 30_001);
    await workers.drain();
    expect(bodies).toHaveLength(1);
    expect(bodies[0]!.events.map((e) => e.body.n)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    // trigger.* is the last event's.
    expect(bodies[0]!.n).toBe(499);
    const merged = (await app.store.fires.list(applet.id, { outcome: "debounced", limit: 200 })).entries;
    expect(merged).toHaveLength(200);
    expect(merged[0]!.runId).toBe(results[0]!.runId);
    expect(merged[0]!.detail).toBe("merged by debounce into the run that starts at 2026-03-07T12:00:30.000Z");
    let stored = 0;
    for (let before: string | null = null; ; ) {
      const page = await app.store.fires.list(applet.id, { outcome: "debounced", before, limit: 200 });
      stored += page.entries.length;
      if (!(before = page.nextCursor)) break;
    }
    expect(stored).toBe(499);
    // A webhook after the window opens a new run.
    app.clock.set(start + 31_000);
    const next = await ingest(app, { appletId: applet.id, source: "webhook", dedupeKey: null, payload: { body: { n: 500 } }, maxAttempts: 5, definition: storedDefinition(applet.definition) });
    expect(next?.runId).not.toBe(results[0]!.runId);
  }, 120_000);
});
