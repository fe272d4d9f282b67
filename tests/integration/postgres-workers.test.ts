import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore, type PostgresStore } from "@/lib/db/store/postgres";
import { spawnWorkerProcess, type WorkerProcess } from "../helpers/processes";
import { TEST_POSTGRES_URL, createTestSchema, urlWithSchema, noPostgres } from "../helpers/postgres";
import { eventsOf } from "../helpers/db";

/**
 * Four real worker processes (worker/index.ts, each its own node) on one PostgreSQL database.
 * 2,000 webhooks for 20 applets: every run executed once, the runs of one applet never overlap
 * (started_at/finished_at), and one schedule slot fires once however many workers tick. Then the
 * same with one worker SIGKILLed in the middle: nothing lost; what runs twice is at most the steps
 * that were in flight on the killed worker, each with the same idempotency key.
 */
const APPLETS = 20;
const PER_APPLET = 100;
const WORKERS = 4;
const KEY = Buffer.alloc(32, 9).toString("base64");

const cleanups: (() => Promise<void> | void)[] = [];

interface Sink {
  url: string;
  bodies: Record<string, unknown>[];
  /** Requests of one applet that were in flight at the same time: a run of it overlapped another. */
  overlaps: string[];
}

/**
 * The http action's endpoint. It holds each request a few milliseconds and counts, per applet,
 * the requests in flight: a second request of an applet arriving while its first is held means
 * two runs of that applet executed at once, whatever the runs' timestamps say.
 */
async function startSink(): Promise<Sink & { close(): Promise<void> }> {
  const bodies: Record<string, unknown>[] = [];
  const overlaps: string[] = [];
  const inFlight = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      bodies.push(body);
      const applet = String(body.applet);
      const n = (inFlight.get(applet) ?? 0) + 1;
      inFlight.set(applet, n);
      if (n > 1) overlaps.push(`${applet} #${String(body.n)}`);
      setTimeout(() => {
        inFlight.set(applet, inFlight.get(applet)! - 1);
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"ok":true}');
      }, 3);
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    bodies,
    overlaps,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(): Promise<{ store: PostgresStore; url: string; sink: Sink; appletIds: string[]; dataDir: string }> {
  const { schema, drop } = await createTestSchema("workers");
  cleanups.push(drop);
  const url = urlWithSchema(schema);
  const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-pgworkers-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const sink = await startSink();
  cleanups.push(() => sink.close());
  const store = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 4, keys: { secretsKey: Buffer.from(KEY, "base64"), sessionSecret: "session" }, alertPolicy });
  cleanups.push(() => store.close());
  await store.ready();
  const now = new Date().toISOString();
  const appletIds = Array.from({ length: APPLETS }, (_, i) => `hook-${String(i).padStart(2, "0")}`);
  for (const id of appletIds) {
    await store.applets.insert({
      id,
      name: id,
      enabled: true,
      triggerType: "webhook",
      definition: {
        version: 1,
        trigger: { type: "webhook", config: {} },
        actions: [{ type: "http", config: { url: sink.url, method: "POST", body: { n: "{{trigger.body.n}}", applet: id } } }],
      },
      webhookToken: `token-${id}-0123456789abcdef0123456789`,
      now,
    });
  }
  // A schedule applet whose slot is due now: four ticking workers, one fire.
  await store.applets.insert({
    id: "sched",
    name: "every minute",
    enabled: true,
    triggerType: "schedule",
    definition: {
      version: 1,
      trigger: { type: "schedule", config: { cron: "0 0 1 1 *", timezone: "UTC" } },
      actions: [{ type: "http", config: { url: sink.url, method: "POST", body: { n: "schedule", applet: "sched" } } }],
    },
    webhookToken: "token-sched-0123456789abcdef0123456789",
    now,
  });
  await store.triggerState.setNextRunAt("sched", new Date(Date.now() - 30_000).toISOString(), now);
  return { store, url, sink, appletIds, dataDir };
}

function startWorkers(url: string, dataDir: string): WorkerProcess[] {
  return Array.from({ length: WORKERS }, (_, i) => {
    const w = spawnWorkerProcess({
      DATA_DIR: path.join(dataDir, `w${i}`),
      DATABASE_URL: url,
      DATABASE_POOL_SIZE: "3",
      SECRETS_KEY: KEY,
      SESSION_SECRET: "session",
      ALLOW_PRIVATE_URLS: "true",
      INBOUND_EMAIL: "false",
      WORKER_CONCURRENCY: "4",
      WORKER_LEASE_SECONDS: "3",
      LOG_LEVEL: "warn",
    });
    cleanups.push(() => w.kill());
    return w;
  });
}

async function ingestAll(store: PostgresStore, appletIds: string[]) {
  const items = [];
  for (let n = 0; n < APPLETS * PER_APPLET; n++) {
    const appletId = appletIds[n % APPLETS]!;
    items.push({ appletId, source: "webhook", dedupeKey: null, payloadJson: JSON.stringify({ body: { n } }), receivedAt: new Date().toISOString(), maxAttempts: 5 });
  }
  for (let i = 0; i < items.length; i += 200) await store.runs.ingestMany(items.slice(i, i + 200));
}

async function waitForAll(store: PostgresStore, total: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await store.pool.query<{ done: number; all: number }>("SELECT COUNT(*) FILTER (WHERE status = 'succeeded')::int AS done, COUNT(*)::int AS all FROM runs");
    if (r.rows[0]!.done >= total) return;
    if (Date.now() > deadline) throw new Error(`only ${r.rows[0]!.done} of ${total} runs succeeded in ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 200));
  }
}

/**
 * Runs of one applet never overlap. Seen at the sink (never two requests of one applet at once),
 * and in the runs' own times: in the order they finished, each run of an applet started after the
 * one before it finished, to the millisecond: a claim's start is never stamped before its
 * applet's last finish, even when its statement waited (for a pooled connection, for the group
 * commit before it) while another worker finished the run before it.
 */
async function assertNoOverlap(store: PostgresStore, sink: Sink, slackMs = 0) {
  expect(sink.overlaps).toEqual([]);
  const rows = (await store.pool.query<{ applet_id: string; started_at: string; finished_at: string }>("SELECT applet_id, started_at, finished_at FROM runs ORDER BY applet_id, finished_at, started_at")).rows;
  let prev: (typeof rows)[number] | undefined;
  for (const r of rows) {
    if (prev && prev.applet_id === r.applet_id) {
      expect(Date.parse(r.started_at) - Date.parse(prev.finished_at), `${r.applet_id}: a run started at ${r.started_at}, the one before finished at ${prev.finished_at}`).toBeGreaterThanOrEqual(-slackMs);
    }
    prev = r;
  }
}

describe.skipIf(noPostgres)(`four worker processes on one PostgreSQL database${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  test("2,000 webhooks for 20 applets: every run once, no overlap within an applet, one schedule slot fires once", async () => {
    const { store, url, sink, appletIds, dataDir } = await setup();
    const workers = startWorkers(url, dataDir);
    await ingestAll(store, appletIds);
    await waitForAll(store, APPLETS * PER_APPLET + 1, 120_000);

    const ns = sink.bodies.map((b) => String(b.n));
    expect(ns.filter((n) => n !== "schedule")).toHaveLength(APPLETS * PER_APPLET);
    expect(new Set(ns).size).toBe(APPLETS * PER_APPLET + 1);
    expect(ns.filter((n) => n === "schedule")).toHaveLength(1);
    expect(await eventsOf(store, "sched")).toHaveLength(1);
    await assertNoOverlap(store, sink);
    // lib/core/log writes "<time> ERROR [scope] message": no worker logged one.
    expect(workers.flatMap((w) => w.lines.filter((l) => /^\S+ ERROR /.test(l)))).toEqual([]);
  }, 180_000);

  test("the same with one worker SIGKILLed in the middle: nothing lost, nothing run twice but the steps in flight", async () => {
    const { store, url, sink, appletIds, dataDir } = await setup();
    const workers = startWorkers(url, dataDir);
    await ingestAll(store, appletIds);
    const deadline = Date.now() + 60_000;
    while (sink.bodies.length < 600 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
    workers[0]!.child.kill("SIGKILL");
    await workers[0]!.exited;
    await waitForAll(store, APPLETS * PER_APPLET + 1, 120_000);

    const ns = sink.bodies.map((b) => String(b.n)).filter((n) => n !== "schedule");
    expect(new Set(ns).size).toBe(APPLETS * PER_APPLET);
    // Repeats: only runs the killed worker had in flight (WORKER_CONCURRENCY 4), each once more.
    const counts = new Map<string, number>();
    for (const n of ns) counts.set(n, (counts.get(n) ?? 0) + 1);
    const repeated = [...counts.values()].filter((c) => c > 1);
    expect(repeated.length).toBeLessThanOrEqual(4);
    expect(repeated.every((c) => c === 2)).toBe(true);
    await assertNoOverlap(store, sink);
    expect(await eventsOf(store, "sched")).toHaveLength(1);
  }, 180_000);
});
