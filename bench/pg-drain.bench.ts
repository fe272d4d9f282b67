/**
 * The queue alone on PostgreSQL: a backlog queued at once, drained by worker processes
 * as users run them (`node dist/worker.mjs`, WORKER_CONCURRENCY 4), each run an http action to a
 * local sink. Without the web process and the load generator of "webhook-postgres" in the way, and
 * with a backlog whose order is chosen, it says what a run costs the database and the workers:
 * runs/s from the first insert to the last settle, and CPU per run of all PostgreSQL processes and
 * of the workers (from /proc). Two orders of the same 6,000 runs (BENCH_DRAIN_RUNS) over 20 applets:
 * interleaved (one run per applet in turn) and in bursts of 50 per applet (what 50 connections
 * sending the same sequence of webhooks make, as autocannon's do at the start of each load in
 * "webhook-postgres"), where the front of the queue is one applet's runs. Needs `pnpm build` first
 * and BENCH_POSTGRES_URL or TEST_POSTGRES_URL (a schema per scenario, dropped after).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { freePorts, requireBuild, start, until, type Proc } from "./processes";
import type { BenchFigure } from "./types";

const PG_URL = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;
const RUNS = Number(process.env.BENCH_DRAIN_RUNS ?? 6_000);
const APPLETS = 20;

/** CPU time (ms) of the processes whose command line matches, from /proc (USER_HZ is 100 on Linux: ticks of 10 ms). */
function cpuMs(match: (cmdline: string) => boolean): number {
  let ticks = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!match(readFileSync(`/proc/${pid}/cmdline`, "latin1"))) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, "latin1").split(")").pop()!.trim().split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10;
}
const isPostgres = (cmd: string) => cmd.startsWith("postgres");
const isWorker = (cmd: string) => cmd.includes("dist/worker.mjs");

async function drain(shape: { name: string; burst: number }, workers: number, sinkPort: number): Promise<BenchFigure[]> {
  const schema = `bench_drain_${randomBytes(4).toString("hex")}`;
  const url = `${PG_URL}${PG_URL!.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-drain-"));
  const keys = { SECRETS_KEY: randomBytes(32).toString("base64"), SESSION_SECRET: randomBytes(24).toString("hex") };
  const env: NodeJS.ProcessEnv = { ...process.env, ...keys, DATA_DIR: dataDir, DATABASE_URL: url, ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "warn", NODE_ENV: "production" };
  const procs: Proc[] = [];
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const app = createApp({ env: { DATA_DIR: dataDir, DATABASE_URL: url, ALLOW_PRIVATE_URLS: "true", ...keys }, log: silentLogger });
  const db = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await app.store.ready?.();
    const service = createAppletService(app);
    const ids: string[] = [];
    for (let i = 0; i < APPLETS; i++) {
      const a = await service.create({
        name: `drain ${i}`,
        definition: {
          version: 1,
          trigger: { type: "webhook", config: {} },
          actions: [{ type: "http", config: { url: `http://127.0.0.1:${sinkPort}/in`, method: "POST", body: { title: "{{trigger.body.title}}", n: "{{trigger.body.n}}" } } }],
        },
      });
      ids.push(a.id);
    }
    const [smtpPort] = (await freePorts(1)) as [number];
    for (let i = 0; i < workers; i++) procs.push(start("dist/worker.mjs", { ...env, SMTP_INBOUND_PORT: String(smtpPort), INBOUND_EMAIL: i === 0 ? "true" : "false" }));
    await until(`${workers} workers`, async () => (await db.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM workers")).rows[0]!.n >= workers, 60_000);
    await new Promise((r) => setTimeout(r, 1_500));

    const pg0 = cpuMs(isPostgres);
    const w0 = cpuMs(isWorker);
    const t0 = performance.now();
    const received = Date.now() - RUNS;
    for (let b = 0; b < RUNS; b += 200) {
      await app.store.runs.ingestMany(
        Array.from({ length: Math.min(200, RUNS - b) }, (_, j) => ({
          appletId: ids[Math.floor((b + j) / shape.burst) % APPLETS]!,
          source: "webhook" as const,
          dedupeKey: null,
          payloadJson: JSON.stringify({ title: "Order #1042 paid", amount: 59.9, n: b + j }),
          receivedAt: new Date(received + b + j).toISOString(),
          maxAttempts: 5,
        })),
      );
    }
    await until(
      "the drain",
      async () =>
        (await db.query<{ idle: boolean }>("SELECT NOT EXISTS (SELECT 1 FROM runs WHERE status IN ('queued', 'running') AND applet_id IS NOT NULL) AS idle")).rows[0]!.idle,
      600_000,
    );
    const seconds = (performance.now() - t0) / 1000;
    const pgPerRun = ((cpuMs(isPostgres) - pg0) * 1000) / RUNS;
    const workersPerRun = ((cpuMs(isWorker) - w0) * 1000) / RUNS;
    const succeeded = (await db.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM runs WHERE status = 'succeeded'")).rows[0]!.n;
    if (succeeded !== RUNS) throw new Error(`bench pg-drain: ${succeeded} of ${RUNS} runs succeeded`);
    const label = `${shape.name}, ${workers} worker process${workers > 1 ? "es" : ""}`;
    return [
      { name: `PostgreSQL drain of ${RUNS} queued runs (${label})`, unit: "runs/s", value: RUNS / seconds, notes: `${seconds.toFixed(1)} s from the first insert to the last settle` },
      { name: `PostgreSQL drain (${label}): PostgreSQL CPU per run`, unit: "µs", value: pgPerRun, notes: "every postgres process of the server" },
      { name: `PostgreSQL drain (${label}): worker CPU per run`, unit: "µs", value: workersPerRun },
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await app.close();
    await db.end();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export default async function bench(): Promise<BenchFigure[]> {
  if (!PG_URL) throw new Error("bench pg-drain: set BENCH_POSTGRES_URL or TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/bench)");
  if (process.platform !== "linux") throw new Error("bench pg-drain: reads CPU times from /proc (Linux only)");
  requireBuild();
  const [sinkPort] = (await freePorts(1)) as [number];
  const sink = start("bench/servers/sink.ts", { ...process.env, PORT: String(sinkPort) }, { tsx: true });
  try {
    await new Promise<void>((resolve) => sink.child.once("message", () => resolve()));
    const figures: BenchFigure[] = [];
    for (const shape of [
      { name: "interleaved", burst: 1 },
      { name: "bursts of 50 per applet", burst: 50 },
    ]) {
      for (const workers of [1, 2]) figures.push(...(await drain(shape, workers, sinkPort)));
    }
    return figures;
  } finally {
    await sink.stop();
  }
}
