/**
 * The app on PostgreSQL as users run it, every figure from one run on one machine:
 *  1. baseline: plain node:http + one prepared PostgreSQL insert per request (bench/servers/baseline-pg.ts),
 *     on the same database server;
 *  2. production: `node dist/server.mjs` and `node dist/worker.mjs` as separate processes with
 *     DATABASE_URL=postgres://…, the worker draining meanwhile: webhook ingest req/s and p50/p99;
 *     1 and 2 alternate for BENCH_ROUNDS rounds (default 3) of BENCH_SECONDS each, each round on a
 *     drained queue; the ratio is the median of the rounds' ratios (the PostgreSQL baseline alone
 *     swung by 40 % between runs here);
 *  3. end to end with 1, 2 and 4 worker processes (each WORKER_CONCURRENCY 4, the default):
 *     N webhooks → http action to a local sink → succeeded, timed from the first request until the
 *     last run settles.
 * Load comes from autocannon at 50 connections on loopback. Needs `pnpm build` first and
 * BENCH_POSTGRES_URL or TEST_POSTGRES_URL (a schema of its own is created and dropped).
 * `pnpm bench webhook webhook-postgres` measures SQLite and PostgreSQL in one run.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { alternatingRounds, freePorts, median, requireBuild, start, until, waitHealthy, type Proc } from "./processes";
import type { BenchFigure } from "./types";

const PG_URL = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;
const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const APPLETS = 20;
const E2E_RUNS = Number(process.env.BENCH_E2E_RUNS ?? 10_000);
const WORKER_COUNTS = [1, 2, 4];
const r1 = (v: number) => Math.round(v * 10) / 10;

export default async function bench(): Promise<BenchFigure[]> {
  if (!PG_URL) throw new Error("bench webhook-postgres: set BENCH_POSTGRES_URL or TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/bench)");
  requireBuild();
  const schema = `bench_app_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const baselineSchema = `${schema}_base`;
  await admin.query(`CREATE SCHEMA ${baselineSchema}`);
  const url = `${PG_URL}${PG_URL.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-pg-"));
  const procs: Proc[] = [];
  const keys = { SECRETS_KEY: randomBytes(32).toString("base64"), SESSION_SECRET: randomBytes(24).toString("hex") };
  const [sinkPort, basePort, webPort, smtpPort] = (await freePorts(4)) as [number, number, number, number];
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "warn", NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1" };
  const ready = (p: Proc) => new Promise<void>((resolve) => p.child.once("message", () => resolve()));
  const db = new pg.Pool({ connectionString: url, max: 2 });
  const count = async (where = "TRUE") => (await db.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM runs WHERE ${where}`)).rows[0]!.n;
  // Polled every 100 ms while the app works: two seeks of the partial indexes, not a count over
  // every run (a sequential scan that took ~12 % of a core from the PostgreSQL being measured).
  const idle = async () =>
    (
      await db.query<{ idle: boolean }>(
        "SELECT NOT EXISTS (SELECT 1 FROM runs WHERE status = 'queued' AND applet_id IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM runs WHERE status = 'running' AND applet_id IS NOT NULL) AS idle",
      )
    ).rows[0]!.idle;
  try {
    const sink = start("bench/servers/sink.ts", { ...env, PORT: String(sinkPort) }, { tsx: true });
    procs.push(sink);
    await ready(sink);

    const base = start("bench/servers/baseline-pg.ts", { ...env, PORT: String(basePort), BENCH_PG_URL: PG_URL, BENCH_PG_SCHEMA: baselineSchema }, { tsx: true });
    procs.push(base);
    await ready(base);

    // Applets whose action posts to the sink, made before the app starts (as a user's would be).
    const app = createApp({ env: { DATA_DIR: dataDir, DATABASE_URL: url, ALLOW_PRIVATE_URLS: "true", ...keys }, log: silentLogger });
    await app.store.ready?.();
    const service = createAppletService(app);
    const hooks: string[] = [];
    for (let i = 0; i < APPLETS; i++) {
      const a = await service.create({
        name: `bench ${i}`,
        definition: {
          version: 1,
          trigger: { type: "webhook", config: {} },
          actions: [{ type: "http", config: { url: `http://127.0.0.1:${sinkPort}/in`, method: "POST", body: { title: "{{trigger.body.title}}", n: "{{trigger.body.n}}" } } }],
        },
      });
      hooks.push(`/api/hooks/${a.id}/${a.webhookToken}`);
    }
    await app.close();

    const appEnv = { ...env, ...keys, DATABASE_URL: url, PORT: String(webPort), HOST: "127.0.0.1", PUBLIC_URL: `http://127.0.0.1:${webPort}` };
    // The first worker keeps the SMTP receiver (one MX, one host); the others run without it.
    const startWorker = (i: number) => start("dist/worker.mjs", { ...appEnv, SMTP_INBOUND_PORT: String(smtpPort), INBOUND_EMAIL: i === 0 ? "true" : "false" });
    const workers = [startWorker(0)];
    const web = start("dist/server.mjs", { ...appEnv, SMTP_INBOUND_PORT: String(smtpPort), INBOUND_EMAIL: "false" });
    procs.push(workers[0]!, web);
    await waitHealthy(`http://127.0.0.1:${webPort}`, [web, workers[0]!]);
    await new Promise((r) => setTimeout(r, 2000));

    const runsBefore = await count();
    const drained = () => until("the worker to drain the ingest backlog", idle, 900_000);
    const rounds = await alternatingRounds(ROUNDS, base, {
      baseline: () => load(`http://127.0.0.1:${basePort}`, ["/"]),
      app: async () => {
        web.resetEld();
        const ingest = await load(`http://127.0.0.1:${webPort}`, hooks);
        return { ingest, webEld: await web.eld() };
      },
      drained,
    });
    type Round = (typeof rounds)[number];
    await base.stop();
    const ingested = (await count()) - runsBefore;
    const sum = (f: (r: Round) => number) => rounds.reduce((s, r) => s + f(r), 0);
    const each = (f: (r: Round) => number) => rounds.map((r) => Math.round(f(r))).join(" / ");
    const ratios = rounds.map((r) => (r.ingest.rps / r.baseline.rps) * 100);
    const cpuPer1000 = { web: sum((r) => r.webEld.cpuMs) / (sum((r) => r.ingest.requests) / 1000), base: sum((r) => r.baseEld.cpuMs) / (sum((r) => r.baseline.requests) / 1000) };

    const e2e: { workers: number; rps: number; seconds: number; failed: number }[] = [];
    for (const n of WORKER_COUNTS) {
      while (workers.length < n) {
        const w = startWorker(workers.length);
        workers.push(w);
        procs.push(w);
      }
      // A new worker is up when its heartbeat row is there.
      await until(`${n} workers`, async () => (await db.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM workers")).rows[0]!.n >= n, 60_000);
      const before = await count("status = 'succeeded'");
      const failedBefore = await count("status NOT IN ('succeeded', 'queued', 'running')");
      const t0 = performance.now();
      await load(`http://127.0.0.1:${webPort}`, hooks, E2E_RUNS);
      // Every webhook was stored when load() returned (202 is durable): done when nothing is queued
      // or running (idle()).
      await until(`the end-to-end runs with ${n} workers`, idle, 900_000);
      const seconds = (performance.now() - t0) / 1000;
      const failed = (await count("status NOT IN ('succeeded', 'queued', 'running')")) - failedBefore;
      if ((await count("status = 'succeeded'")) + failed < before + E2E_RUNS) throw new Error("bench: runs are missing after the end-to-end load");
      e2e.push({ workers: n, rps: E2E_RUNS / seconds, seconds, failed });
    }
    sink.child.send("count");
    const sunk = await new Promise<number>((r) => sink.child.once("message", (m) => r((m as { count: number }).count)));
    const server = (await db.query<{ server_version: string }>("SHOW server_version")).rows[0]!.server_version;
    // Without autovacuum (some test machines turn it off) the dead index entries of every claimed
    // run stay in the queue's indexes, and every claim walks them: say so beside the figures.
    const autovacuum = (await db.query<{ autovacuum: string }>("SHOW autovacuum")).rows[0]!.autovacuum;

    return [
      {
        name: `PostgreSQL baseline: node:http + one prepared PostgreSQL insert, 50 connections (mean of ${ROUNDS} rounds of ${SECONDS} s)`,
        unit: "req/s",
        value: sum((r) => r.baseline.rps) / ROUNDS,
        notes: `per round ${each((r) => r.baseline.rps)}; p50 ${median(rounds.map((r) => r.baseline.p50))} ms, p99 ${median(rounds.map((r) => r.baseline.p99))} ms, event-loop delay p99 ${r1(median(rounds.map((r) => r.baseEld.p99)))} ms; PostgreSQL ${server} on the same machine, autovacuum ${autovacuum}${autovacuum === "on" ? "" : " (the server's setting: nothing removes dead index entries, and claims slow down as runs are processed)"}`,
      },
      {
        name: `PostgreSQL production (dist/server.mjs + dist/worker.mjs): webhook ingest, 50 connections, one worker draining (mean of ${ROUNDS} rounds)`,
        unit: "req/s",
        value: sum((r) => r.ingest.rps) / ROUNDS,
        notes: `per round ${each((r) => r.ingest.rps)}; ${sum((r) => r.ingest.requests)} requests, ${sum((r) => r.ingest.non2xx)} not 202, ${ingested} runs stored; web event-loop delay p99 ${r1(median(rounds.map((r) => r.webEld.p99)))} ms`,
      },
      { name: "PostgreSQL production: webhook ingest vs its baseline, median of the rounds' ratios", unit: "%", value: median(ratios), target: ">= 60", notes: `rounds ${ratios.map((v) => r1(v)).join(" / ")} %` },
      {
        name: "PostgreSQL production: web process CPU per 1,000 webhooks vs the baseline's",
        unit: "%",
        value: (cpuPer1000.web / cpuPer1000.base) * 100,
        notes: `web ${r1(cpuPer1000.web)} ms, baseline ${r1(cpuPer1000.base)} ms of CPU per 1,000 requests: what each costs itself, which contention for the cores changes far less than req/s`,
      },
      { name: "PostgreSQL production: webhook ingest p50, median of the rounds'", unit: "ms", value: median(rounds.map((r) => r.ingest.p50)) },
      { name: "PostgreSQL production: webhook ingest p99, median of the rounds'", unit: "ms", value: median(rounds.map((r) => r.ingest.p99)), notes: `rounds ${each((r) => r.ingest.p99)} ms; the baseline's ${each((r) => r.baseline.p99)} ms` },
      ...e2e.map((r) => ({
        name: `PostgreSQL end to end, ${E2E_RUNS} webhooks → http action → succeeded, ${r.workers} worker process${r.workers > 1 ? "es" : ""}`,
        unit: "runs/s",
        value: r.rps,
        ...(r.workers === 2 ? { target: ">= 1000" } : {}),
        notes: `${r.seconds.toFixed(1)} s, ${APPLETS} applets, WORKER_CONCURRENCY ${process.env.WORKER_CONCURRENCY ?? 4} each, ${r.failed} runs not succeeded`,
      })),
      { name: "PostgreSQL: requests the sink saw", unit: "requests", value: sunk, notes: `${E2E_RUNS * WORKER_COUNTS.length} end-to-end runs plus the ${ingested} of the ingest load` },
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await db.end();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`DROP SCHEMA IF EXISTS ${baselineSchema} CASCADE`);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** autocannon round-robin over the paths; a fixed amount of requests when `amount` is given. */
async function load(base: string, paths: string[], amount?: number) {
  const body = JSON.stringify({ title: "Order #1042 paid", amount: 59.9, n: 1 });
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    ...(amount ? { amount } : { duration: SECONDS }),
    requests: paths.map((p) => ({ method: "POST" as const, path: p, headers: { "content-type": "application/json" }, body })),
  });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, requests: result.requests.total, non2xx: result.non2xx };
}
