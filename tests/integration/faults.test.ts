import { mkdirSync } from "node:fs";
import path from "node:path";
import { delay, http, HttpResponse } from "msw";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { createFaultTracker } from "@/lib/core/faults";
import { checkHealth } from "@/lib/health";
import { createSandbox } from "@/lib/sandbox";
import { runSchedulerTick } from "@/lib/tick/tick";
import { captureLog, createTestApp, webhookToHttp, type TestApp } from "../helpers/db";
import { injectCommitFailure, isSmallDisk, mountSmallDisk } from "../helpers/full-disk";
import { server, useHttpMocks } from "../helpers/http";
import { spawnWorkerProcess, startSink, startSlowServer } from "../helpers/processes";
import { startWorker } from "../helpers/worker";
import { until } from "../helpers/wait";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { forEachEngine, testSql } from "../helpers/engines";

/**
 * Reliability under faults. Real SQLite files; the full disk is a real one (a small
 * tmpfs) where this machine lets the test mount it, and a commit failure injected at the statement
 * layer otherwise (and always, for the paths a full disk cannot single out).
 */
useHttpMocks();

const disk = mountSmallDisk();
afterAll(() => {
  if (isSmallDisk(disk)) disk.cleanup();
});
const noDisk = isSmallDisk(disk) ? false : disk.unavailable;

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  if (isSmallDisk(disk)) disk.free();
});

let appCount = 0;
/** A test app whose DATA_DIR is on the small disk (or in a temp folder when there is none). */
function setup(opts: { onDisk?: boolean; env?: Record<string, string> } = {}): TestApp & { lines: string[] } {
  const { log, lines } = captureLog();
  let dataDir: string | undefined;
  if (opts.onDisk && isSmallDisk(disk)) {
    dataDir = path.join(disk.dir, `app-${++appCount}`);
    mkdirSync(dataDir);
  }
  const app = createTestApp({ dataDir, log, env: opts.env });
  cleanups.push(() => app.cleanup());
  return Object.assign(app, { lines });
}

/** The sink the runs' http action posts to: every request's Idempotency-Key, in arrival order. */
function sink(): string[] {
  const keys: string[] = [];
  server.use(
    http.post("https://sink.test/hook", async ({ request }) => {
      keys.push(request.headers.get("idempotency-key") ?? "");
      // A turn of the event loop, as a real network answer takes: a worker that re-runs a run in a
      // loop (the old full-disk bug) must not starve the test's own timers.
      await delay(1);
      return HttpResponse.json({ ok: true });
    }),
  );
  return keys;
}

const fastFaults = (app: TestApp) => createFaultTracker({ clock: app.clock, log: app.log, minMs: 2, maxMs: 20 });

/** Counts the calls of a repos method (the loop reads it from the repos object on every call). */
function countCalls<T extends object, K extends keyof T>(obj: T, key: K): { n: number } {
  const counter = { n: 0 };
  const original = obj[key] as unknown as (...args: unknown[]) => unknown;
  (obj as Record<K, unknown>)[key] = (...args: unknown[]) => {
    counter.n++;
    return original(...args);
  };
  return counter;
}

describe("nothing executes without a committed claim", () => {
  test.skipIf(noDisk)("on a full disk the claim throws and the run stays queued, with nothing claimed", async () => {
    const app = setup({ onDisk: true });
    const applet = await app.applets.create({ name: "full", definition: webhookToHttp("https://sink.test/hook") });
    const runId = (await app.applets.test(applet.id, { body: {} })).runId;
    const user = app.store.users;
    await user.insert({ id: "u1", email: "a@example.com", passwordHash: "x", now: app.clock.now().toISOString() });
    // An empty WAL: the next commit has to grow it, and the disk has no room.
    sqliteOf(app.store).pragma("wal_checkpoint(TRUNCATE)");
    if (!isSmallDisk(disk)) return;
    disk.fill();
    await expect(app.store.runs.claim("w1", app.clock.now())).rejects.toThrow(/full/i);
    expect(await app.store.runs.get(runId)).toMatchObject({ status: "queued", lockedBy: null });
    // The other UPDATE … RETURNING the app acts on: a session version that was never stored.
    await expect(user.bumpSessionVersion("u1", app.clock.now().toISOString())).rejects.toThrow(/full/i);
    expect((await user.byId("u1"))!.sessionVersion).toBe(1);
    disk.free();
    expect((await app.store.runs.claim("w1", app.clock.now()))?.id).toBe(runId);
    expect((await app.store.runs.get(runId))!.status).toBe("running");
  });

  test.skipIf(noDisk)("a worker on a full disk executes no run; when space is back each run executes exactly once", async () => {
    const app = setup({ onDisk: true });
    const keys = sink();
    const applet = await app.applets.create({ name: "burst", definition: webhookToHttp("https://sink.test/hook") });
    const runIds = (await Promise.all([1, 2, 3].map(async (n) => (await app.applets.test(applet.id, { body: { n } })).runId)));
    // The worker starts (and registers its lease) before the runs are due, then the disk fills.
    const due = app.clock.now();
    app.clock.advance(-3_600_000);
    const worker = startWorker(app, { concurrency: 2, loop: { faults: fastFaults(app) } });
    cleanups.push(() => worker.stop());
    const claims = countCalls(app.store.runs, "claim");
    const beats = countCalls(app.store.workers, "heartbeat");
    await until(() => claims.n > 0, "the worker to look at the queue");
    sqliteOf(app.store).pragma("wal_checkpoint(TRUNCATE)");
    if (!isSmallDisk(disk)) return;
    disk.fill();
    app.clock.set(due);
    // Long enough for the old code to have claimed, posted and re-claimed many times over.
    await until(() => beats.n >= 20 || keys.length >= 3, "the worker to keep trying");
    expect(keys).toEqual([]);
    for (const id of runIds) expect(await app.store.runs.get(id)).toMatchObject({ status: "queued", attempt: 1 });
    expect(app.lines.some((l) => /heartbeat failed/.test(l) && /SQLITE_FULL/.test(l))).toBe(true);

    disk.free();
    await worker.drain();
    for (const id of runIds) expect(await app.store.runs.get(id)).toMatchObject({ status: "succeeded", attempt: 1 });
    const eventKeys = (await Promise.all(runIds.map(async (id) => `${(await app.store.runs.get(id))!.eventId}:0`)));
    expect(keys).toEqual(eventKeys);
    expect(app.lines.some((l) => /heartbeat works again/.test(l))).toBe(true);
  });

  test("a claim whose commit is refused executes nothing (commit failure injected at the statement layer)", async () => {
    const app = setup();
    const keys = sink();
    const applet = await app.applets.create({ name: "refused", definition: webhookToHttp("https://sink.test/hook") });
    const runIds = (await Promise.all([1, 2].map(async (n) => (await app.applets.test(applet.id, { body: { n } })).runId)));
    // Every commit that writes `runs` is refused; the lease and heartbeat (other tables) still work,
    // so the worker really tries to claim.
    const restore = injectCommitFailure(sqliteOf(app.store), ["runs"]);
    const worker = startWorker(app, { concurrency: 2, loop: { faults: fastFaults(app) } });
    cleanups.push(() => worker.stop());
    const claims = countCalls(app.store.runs, "claim");
    await until(() => claims.n >= 20 || keys.length >= 2, "the worker to keep trying");
    expect(keys).toEqual([]);
    for (const id of runIds) expect(await app.store.runs.get(id)).toMatchObject({ status: "queued", attempt: 1, lockedBy: null });
    expect(app.lines.some((l) => /claiming runs failed/.test(l))).toBe(true);

    restore();
    await worker.drain();
    expect(keys).toEqual((await Promise.all(runIds.map(async (id) => `${(await app.store.runs.get(id))!.eventId}:0`))));
    for (const id of runIds) expect(await app.store.runs.get(id)).toMatchObject({ status: "succeeded", attempt: 1 });
  });
});

/** A worker that claimed runs and then died: its lease row (unless `noRow`) stops being renewed. */
async function deadWorker(app: TestApp, id: string, opts: { noRow?: boolean; leaseMs?: number } = {}) {
  if (!opts.noRow) (await app.store.workers.heartbeat({ id, hostname: "gone", pid: 4242, now: app.clock.now(), leaseMs: opts.leaseMs ?? 30_000, fault: null }));
  return { claim: async () => (await app.store.runs.claim(id, app.clock.now()))! };
}

/** A sink that records the `n` of each body, in arrival order. */
function orderSink(): number[] {
  const seen: number[] = [];
  server.use(
    http.post("https://sink.test/ordered", async ({ request }) => {
      seen.push(Number((JSON.parse(await request.text()) as { n: string }).n));
      return HttpResponse.json({ ok: true });
    }),
  );
  return seen;
}
const orderedApplet = { ...webhookToHttp("https://sink.test/ordered"), actions: [{ type: "http", config: { url: "https://sink.test/ordered", method: "POST", body: { n: "{{trigger.body.n}}" } } }] };

describe("a run whose action was delivered is never failed without a retry decision", () => {
  test("an error outside the actions after a delivery retries the run, which resumes after the delivered step instead of ending failed", async () => {
    const app = setup();
    const seen: string[] = [];
    server.use(
      http.post("https://sink.test/parts", async ({ request }) => {
        seen.push(String((JSON.parse(await request.text()) as { part: string }).part));
        return HttpResponse.json({ ok: true });
      }),
    );
    const applet = await app.applets.create({
      name: "two parts",
      definition: {
        ...webhookToHttp("https://sink.test/parts"),
        actions: [
          { type: "http", config: { url: "https://sink.test/parts", method: "POST", body: { part: "first" } } },
          { type: "http", config: { url: "https://sink.test/parts", method: "POST", body: { part: "second" } } },
        ],
      },
    });
    const { runId } = await app.applets.test(applet.id, { body: {} });
    // The checkpoint after the first action fails with something that is not the database's.
    const saveSteps = app.store.runs.saveSteps;
    let failed = false;
    app.store.runs.saveSteps = async (...args) => {
      if (!failed) {
        failed = true;
        throw new Error("a bug between two steps");
      }
      return saveSteps(...args);
    };
    const worker = startWorker(app, { concurrency: 1 });
    cleanups.push(() => worker.stop());
    await until(async () => (await app.store.runs.get(runId))!.status !== "running" && failed, "the first attempt to settle");
    await worker.drain();
    expect(await app.store.runs.get(runId)).toMatchObject({ status: "queued", attempt: 2 });
    expect((await app.store.runs.get(runId))!.error).toMatch(/a bug between two steps/);
    expect(seen).toEqual(["first"]);
    app.clock.advance(10 * 60_000);
    await worker.drain();
    expect(await app.store.runs.get(runId)).toMatchObject({ status: "succeeded", attempt: 2 });
    expect(seen).toEqual(["first", "second"]);
  });
});

describe("worker leases", () => {
  test("a run left running by a worker whose lease expired is taken back after the lease, not after 10 minutes", async () => {
    const app = setup();
    const keys = sink();
    const applet = await app.applets.create({ name: "crashed", definition: webhookToHttp("https://sink.test/hook") });
    const runId = (await app.applets.test(applet.id, { body: {} })).runId;
    await (await deadWorker(app, "crashed-host:7:aaaaaa")).claim();
    const worker = startWorker(app, { loop: { staleCheckMs: 5, leaseMs: 30_000 } });
    cleanups.push(() => worker.stop());
    const checks = countCalls(app.store.runs, "recoverStale");

    // 20 s later the dead worker's lease (30 s) still stands: its run is left alone.
    app.clock.advance(20_000);
    const seen = checks.n;
    await until(() => checks.n >= seen + 3, "a few recovery checks");
    expect(await app.store.runs.get(runId)).toMatchObject({ status: "running", lockedBy: "crashed-host:7:aaaaaa" });

    // 31 s: the lease has expired; the run goes back to the queue and runs, same attempt, once.
    app.clock.advance(11_000);
    await until(async () => (await app.store.runs.get(runId))!.status === "succeeded", "the recovered run to run");
    expect(await app.store.runs.get(runId)).toMatchObject({ status: "succeeded", attempt: 1, lockedBy: null });
    expect(keys).toHaveLength(1);
    expect(app.lines.some((l) => /requeued runs whose worker's lease expired/.test(l) && l.includes("crashed-host:7:aaaaaa"))).toBe(true);
  });

  test("a restored database's running runs are recovered on the first start", async () => {
    const app = setup();
    const seen = orderSink();
    // A backup taken mid-burst: four applets each had a run in flight (their workers' rows are not
    // in it, or belong to processes long gone), with more runs queued behind each.
    const applets = [];
    for (const i of [1, 2, 3, 4]) applets.push(await app.applets.create({ name: `restored ${i}`, definition: orderedApplet }));
    for (let n = 0; n < 20; n++) (await app.applets.test(applets[n % 4]!.id, { body: { n } }));
    const old = await deadWorker(app, "old-host:1:bbbbbb", { leaseMs: 30_000 });
    const inFlight = [await old.claim(), await old.claim(), (await app.store.runs.claim("older-release-worker/0", app.clock.now()))!, (await app.store.runs.claim("older-release-worker/1", app.clock.now()))!];
    expect(new Set(inFlight.map((r) => r.appletId)).size).toBe(4);
    // Restored and started a minute later: no lease of those workers is live.
    app.clock.advance(60_000);
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    await worker.drain();
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, n) => n));
    for (const r of inFlight) expect(await app.store.runs.get(r.id)).toMatchObject({ status: "succeeded", attempt: 1 });
  });

  test("a live worker's run is only taken back at the 10-minute stuck bound; a stopped worker's lease ends with it", async () => {
    const app = setup();
    sink();
    const applet = await app.applets.create({ name: "stuck", definition: webhookToHttp("https://sink.test/hook") });
    const runId = (await app.applets.test(applet.id, { body: {} })).runId;
    const live = { id: "busy-host:9:cccccc", hostname: "busy-host", pid: 9, leaseMs: 30_000, fault: null };
    await app.store.workers.heartbeat({ ...live, now: app.clock.now() });
    await app.store.runs.claim(live.id, app.clock.now());
    const stuckBefore = () => new Date(app.clock.now().getTime() - 10 * 60_000);
    app.clock.advance(9 * 60_000);
    await app.store.workers.heartbeat({ ...live, now: app.clock.now() });
    expect(await app.store.runs.recoverStale({ now: app.clock.now(), stuckBefore: stuckBefore() })).toEqual([]);
    app.clock.advance(2 * 60_000);
    await app.store.workers.heartbeat({ ...live, now: app.clock.now() });
    expect(await app.store.runs.recoverStale({ now: app.clock.now(), stuckBefore: stuckBefore() })).toEqual([
      { id: runId, appletId: applet.id, lockedBy: live.id, reason: "stuck" },
    ]);

    const worker = startWorker(app, { workerId: "clean-stop:1:dddddd" });
    // Its liveness is set up before its first heartbeat: it is listed once it has started.
    await worker.loop.started;
    expect((await app.store.workers.live(app.clock.now())).map((w) => w.id)).toContain("clean-stop:1:dddddd");
    await worker.stop();
    expect((await app.store.workers.live(app.clock.now())).map((w) => w.id)).not.toContain("clean-stop:1:dddddd");
  });
});

describe("recovered runs keep their order", () => {
  test("a recovered run runs before the runs of its applet queued after it (oldest first)", async () => {
    const app = setup();
    const seen = orderSink();
    const applet = await app.applets.create({ name: "ordered", definition: orderedApplet });
    await app.applets.test(applet.id, { body: { n: 1 } });
    const crashed = await (await deadWorker(app, "crashed-host:3:eeeeee")).claim();
    for (let n = 2; n <= 6; n++) {
      app.clock.advance(1_000);
      await app.applets.test(applet.id, { body: { n } });
    }
    // Recovered 11 minutes later (also what the old stuck rule needed to recover it at all).
    app.clock.advance(11 * 60_000);
    const worker = startWorker(app, { concurrency: 4 });
    cleanups.push(() => worker.stop());
    await worker.drain();
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await app.store.runs.get(crashed.id)).toMatchObject({ status: "succeeded", attempt: 1 });
  });
});

describe("a row the executor cannot read ends its run", () => {
  test("an unreadable payload, definition or steps fails the run with the reason, and the applet moves on", async () => {
    const app = setup();
    const seen = orderSink();
    const sql = sqliteOf(app.store);
    const a = await app.applets.create({ name: "bad payload", definition: orderedApplet });
    const poisoned = await app.applets.test(a.id, { body: { n: 1 } });
    sql.prepare("UPDATE events SET payload = '{\"body\": {\"n\": 1' WHERE id = ?").run(poisoned.eventId);
    const badSteps = await app.applets.test(a.id, { body: { n: 2 } });
    sql.prepare("UPDATE runs SET steps = 'not json', attempt = 2 WHERE id = ?").run(badSteps.runId);
    app.clock.advance(1_000);
    const after = await app.applets.test(a.id, { body: { n: 3 } });
    const b = await app.applets.create({ name: "bad definition", definition: orderedApplet });
    const badDefinition = await app.applets.test(b.id, { body: { n: 4 } });
    sql.prepare("UPDATE applets SET definition = '{\"version\": 1, ' WHERE id = ?").run(b.id);

    const worker = startWorker(app, { concurrency: 2 });
    cleanups.push(() => worker.stop());
    await worker.drain();

    expect(await app.store.runs.get(poisoned.runId)).toMatchObject({ status: "failed", attempt: 1 });
    expect((await app.store.runs.get(poisoned.runId))!.error).toMatch(new RegExp(`^executor: could not read the stored payload of event ${poisoned.eventId}: not valid JSON`));
    expect(await app.store.runs.get(badSteps.runId)).toMatchObject({ status: "failed", attempt: 2 });
    expect((await app.store.runs.get(badSteps.runId))!.error).toMatch(/^executor: could not read the stored steps: not valid JSON/);
    // The unreadable steps are kept as they were, for whoever looks into it.
    expect(sql.prepare("SELECT steps FROM runs WHERE id = ?").get(badSteps.runId)).toEqual({ steps: "not json" });
    expect(await app.store.runs.get(badDefinition.runId)).toMatchObject({ status: "failed" });
    expect((await app.store.runs.get(badDefinition.runId))!.error).toMatch(new RegExp(`^executor: could not read the stored definition of applet ${b.id}: not valid JSON`));
    // The applet is not blocked: its next run ran.
    expect(await app.store.runs.get(after.runId)).toMatchObject({ status: "succeeded" });
    expect(seen).toEqual([3]);
  });
});

forEachEngine((engine) => {
  // PostgreSQL's json columns refuse text that is not JSON, so what can go wrong there (and on
  // SQLite too) is JSON of the wrong shape: a restored dump, a hand edit, an older release's rows.
  test(`(${engine.name}): steps, a definition or a payload of the wrong shape fail their run with the reason, and the applet moves on`, async () => {
    const { log, lines } = captureLog();
    const app = Object.assign(createTestApp({ log, engine }), { lines });
    cleanups.push(() => app.cleanup());
    const seen = orderSink();
    const sql = testSql(app.store);
    const a = await app.applets.create({ name: "bad steps", definition: orderedApplet });
    const badSteps = await app.applets.test(a.id, { body: { n: 1 } });
    await sql.run(`UPDATE runs SET steps = '{"not": "a list"}', attempt = 2 WHERE id = ?`, badSteps.runId);
    const odd = await app.applets.test(a.id, { body: { n: 2 } });
    await sql.run(`UPDATE events SET payload = '"just text"' WHERE id = ?`, odd.eventId);
    app.clock.advance(1_000);
    const after = await app.applets.test(a.id, { body: { n: 3 } });
    const b = await app.applets.create({ name: "bad definition", definition: orderedApplet });
    const badDefinition = await app.applets.test(b.id, { body: { n: 4 } });
    await sql.run(`UPDATE applets SET definition = '{"version": 7, "steps": 3}' WHERE id = ?`, b.id);

    const worker = startWorker(app, { concurrency: 2 });
    cleanups.push(() => worker.stop());
    await worker.drain();

    expect(await app.store.runs.get(badSteps.runId)).toMatchObject({ status: "failed", attempt: 2 });
    expect((await app.store.runs.get(badSteps.runId))!.error).toBe("executor: could not read the stored steps: not a JSON array");
    expect(await app.store.runs.get(badDefinition.runId)).toMatchObject({ status: "failed" });
    expect((await app.store.runs.get(badDefinition.runId))!.error).toMatch(/^executor: the applet definition is invalid: version: /);
    // A payload that is JSON but not an object is an event without a body: the run goes on.
    expect(await app.store.runs.get(odd.runId)).toMatchObject({ status: "succeeded" });
    expect(await app.store.runs.get(after.runId)).toMatchObject({ status: "succeeded" });
    expect(seen).toEqual([expect.anything(), 3]);
  });
});

describe("the worker survives a full disk", () => {
  test.skipIf(noDisk)("a worker started on a full disk stays up, reports the fault, and resumes by itself when space is freed", async () => {
    const app = setup({ onDisk: true, env: { ALLOW_PRIVATE_URLS: "true" } });
    const target = await startSink();
    cleanups.push(() => target.close());
    const applet = await app.applets.create({ name: "disk", definition: { ...orderedApplet, actions: [{ type: "http", config: { url: target.url, method: "POST", body: { n: "{{trigger.body.n}}" } } }] } });
    for (const n of [1, 2]) (await app.applets.test(applet.id, { body: { n } }));
    // This connection stays open through the test, as the web process's does.
    sqliteOf(app.store).pragma("wal_checkpoint(TRUNCATE)");
    if (!isSmallDisk(disk)) return;
    disk.fill();

    const worker = spawnWorkerProcess({ DATA_DIR: app.dataDir, WORKER_LEASE_SECONDS: "2", ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "debug" });
    cleanups.push(() => worker.kill());
    await worker.waitFor(/ERROR.*heartbeat failed; retrying with back-off.*SQLITE_FULL/);
    // Still alive several back-off rounds later (the old worker exited at its first heartbeat).
    await worker.waitFor(/heartbeat failed again.*"failures":4/);
    expect(worker.child.exitCode).toBeNull();
    expect(target.bodies).toEqual([]);
    const during = await checkHealth(app);
    expect(during.ok).toBe(false);
    expect(during.problems).toEqual(expect.arrayContaining([expect.stringMatching(/^disk: \d+ (bytes|KB) free where the database is/), expect.stringMatching(/^worker: no heartbeat yet/)]));

    disk.free();
    await worker.waitFor(/heartbeat works again/);
    await until(async () => target.bodies.length >= 2 && (await checkHealth(app)).ok, "the worker to catch up and report healthy", 20_000);
    expect(target.bodies).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await checkHealth(app)).toMatchObject({ ok: true, problems: [] });
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
  }, 60_000);
});

// On each engine: the hand-back is the store's (a fenced release), PostgreSQL's as much as SQLite's.
forEachEngine((engine) => {
  test(`(${engine.name}): stop() claims nothing more at once and hands the runs still in flight back to the queue after the grace`, async () => {
    const { log, lines } = captureLog();
    const app = Object.assign(createTestApp({ log, engine }), { lines });
    cleanups.push(() => app.cleanup());
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    server.use(
      http.post("https://slow.test/hold", async () => {
        await held;
        return HttpResponse.json({ ok: true });
      }),
    );
    const slow = await app.applets.create({ name: "slow", definition: webhookToHttp("https://slow.test/hold") });
    const other = await app.applets.create({ name: "other", definition: webhookToHttp("https://sink.test/hook") });
    const keys = sink();
    const inFlight = (await app.applets.test(slow.id, { body: {} })).runId;
    const worker = startWorker(app, { concurrency: 1 });
    await until(async () => (await app.store.runs.get(inFlight))!.status === "running", "the slow run to start");
    const queued = (await Promise.all([1, 2, 3].map(async (n) => (await app.applets.test(other.id, { body: { n } })).runId)));
    const stopped = await worker.loop.stop({ graceMs: 50 });
    expect(stopped.released).toEqual([inFlight]);
    expect(await app.store.runs.get(inFlight)).toMatchObject({ status: "queued", attempt: 1, lockedBy: null, startedAt: null });
    for (const id of queued) expect(await app.store.runs.get(id)).toMatchObject({ status: "queued", startedAt: null });
    release();
    expect(keys).toEqual([]);
    expect(await app.store.workers.live(app.clock.now())).toEqual([]);
  });
});

describe("SIGTERM", () => {

  test("aborting a scheduler tick aborts its feed requests at once and stores nothing for them", async () => {
    const app = setup({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const feed = await startSlowServer();
    cleanups.push(() => feed.close());
    const applet = await app.applets.create({
      name: "slow feed",
      definition: { version: 1, trigger: { type: "rss", config: { url: feed.url } }, actions: [{ type: "http", config: { url: "https://sink.test/hook", body: "{}" } }] },
    });
    const before = (await app.store.triggerState.get(applet.id))!;
    const abort = new AbortController();
    const tick = runSchedulerTick(app, app.clock.now(), { holder: "w", signal: abort.signal });
    await until(() => feed.requests === 1, "the tick to fetch the feed");
    abort.abort();
    const result = await tick;
    expect(result).toMatchObject({ ran: true, events: 0 });
    const after = (await app.store.triggerState.get(applet.id))!;
    expect(after).toMatchObject({ lastError: before.lastError, errorCount: before.errorCount, lastPolledAt: before.lastPolledAt });
    // The lock is released for the next worker.
    expect(await app.store.jobLocks.get("scheduler_tick")).toMatchObject({ lockedBy: null });
  });

  test("on SIGTERM the worker stops claiming at once while its tick waits on a slow feed, and exits within its bound", async () => {
    const app = setup({ env: { ALLOW_PRIVATE_URLS: "true" } });
    const feed = await startSlowServer();
    cleanups.push(() => feed.close());
    const target = await startSink({ delayMs: 300 });
    cleanups.push(() => target.close());
    await app.applets.create({
      name: "slow feed",
      definition: { version: 1, trigger: { type: "rss", config: { url: feed.url } }, actions: [{ type: "http", config: { url: target.url, body: "{}" } }] },
    });
    const busy = await app.applets.create({ name: "busy", definition: { ...orderedApplet, actions: [{ type: "http", config: { url: target.url, method: "POST", body: { n: "{{trigger.body.n}}" } } }] } });
    const runIds: string[] = [];
    for (let n = 0; n < 30; n++) runIds.push((await app.applets.test(busy.id, { body: { n } })).runId);

    const worker = spawnWorkerProcess({ DATA_DIR: app.dataDir, ALLOW_PRIVATE_URLS: "true", WORKER_SHUTDOWN_SECONDS: "5" });
    cleanups.push(() => worker.kill());
    await worker.waitFor(/worker started/);
    // The tick runs at the next quarter minute and then hangs on the feed.
    await until(() => feed.requests > 0, "the scheduler tick to reach the slow feed", 25_000);
    worker.child.kill("SIGTERM");
    const started = Date.now();
    expect(await worker.exited).toBe(0);
    const exitedAfterMs = Date.now() - started;
    // "At once" is when the worker's handler ran (the line it logs first, with its time): a claim
    // the worker made between kill() and its event loop reaching the signal was made before it.
    const stopLine = worker.lines.find((l) => /SIGTERM: no new runs/.test(l));
    expect(stopLine).toBeDefined();
    const termAt = stopLine!.split(" ")[0]!;
    expect(Date.parse(termAt)).not.toBeNaN();
    const runs = (await Promise.all(runIds.map(async (id) => (await app.store.runs.get(id))!)));
    const startedAfter = runs.filter((r) => r.startedAt !== null && r.startedAt > termAt);
    expect(startedAfter).toEqual([]);
    const sentAtSigterm = runs.filter((r) => r.startedAt !== null && r.startedAt <= termAt && r.status === "succeeded").length;
    // Within the bound (5 s for runs in flight, plus closing): the feed request was aborted, not
    // waited out for its 20 s timeout.
    expect(exitedAfterMs).toBeLessThan(8_000);
    // Only runs started before the handler were sent; nothing is left running.
    expect(target.bodies.length).toBe(sentAtSigterm);
    expect(runs.filter((r) => r.status === "running")).toEqual([]);
    expect(runs.filter((r) => r.status === "succeeded").length).toBe(target.bodies.length);
  }, 60_000);
});

describe("minor", () => {
  test("a filter's unhandled Promise.reject(Symbol()) fails the run instead of letting it succeed", async () => {
    const app = setup();
    const keys = sink();
    const sandbox = createSandbox({ threads: 1 });
    cleanups.push(() => sandbox.close());
    const applet = await app.applets.create({ name: "rejects", definition: { ...webhookToHttp("https://sink.test/hook"), filter: { code: "Promise.reject(Symbol())" } } });
    const runId = (await app.applets.test(applet.id, { body: {} })).runId;
    const worker = startWorker(app, { deps: { sandbox } });
    cleanups.push(() => worker.stop());
    await worker.drain();
    expect(await app.store.runs.get(runId)).toMatchObject({ status: "failed", error: "filter: unhandled promise rejection: Symbol()" });
    expect(keys).toEqual([]);
  });

  test("an applet deleted while its run is in flight is logged as deleted, not as taken over by another worker", async () => {
    const app = setup();
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    server.use(
      http.post("https://slow.test/hold", async () => {
        await held;
        return HttpResponse.json({ ok: true });
      }),
    );
    const applet = await app.applets.create({ name: "deleted", definition: webhookToHttp("https://slow.test/hold") });
    const runId = (await app.applets.test(applet.id, { body: {} })).runId;
    const worker = startWorker(app, { concurrency: 1 });
    cleanups.push(() => worker.stop());
    await until(async () => (await app.store.runs.get(runId))?.status === "running", "the run to start");
    await app.applets.delete(applet.id);
    release();
    await until(() => app.lines.some((l) => /deleted while it ran/.test(l)), "the run's end to be logged");
    expect(app.lines.some((l) => /taken over by another worker/.test(l))).toBe(false);
  });
});
