/**
 * Waiting runs cost nothing while they wait (docs/definition.md, Wait), on SQLite and, with
 * BENCH_POSTGRES_URL or TEST_POSTGRES_URL, on PostgreSQL:
 *  1. the tick's part for waits (lib/waits/tick.ts resumeDueWaits → store.waits.resumeDue) with 0,
 *     100 and 1,000 due among 100,000 waiting runs, beside the same due counts among 1,000: the
 *     median of BENCH_WAITS_REPEATS (5) ticks through the store, each resuming exactly the due ones
 *     (then put back to waiting); on PostgreSQL EXPLAIN (ANALYZE, BUFFERS) of the tick's statement
 *     (RESUME_DUE, in a transaction rolled back) gives the pages it touched, on SQLite EXPLAIN QUERY
 *     PLAN shows the index it reads. The cost must follow the runs due, not the runs waiting;
 *  2. a production worker (`node dist/worker.mjs`, from `pnpm build`) over 100,000 waiting runs:
 *     its VmRSS sampled every 5 s for BENCH_WAITS_RSS_SECONDS (180) of ticks (the waits' part runs
 *     every second), none of them due: first, last, highest.
 * The waiting runs are copies of real ones: one run per kind is taken to its wait by the real
 * executor (in this process), and its events, runs and run_waits rows are copied with new ids and
 * resume times (90 % delays due from a day ahead, one second apart; 10 % waiting for a call).
 * BENCH_WAITS_RUNS changes the 100,000.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { actionRegistry } from "@/lib/actions";
import { createApp, type App } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { ManualClock } from "@/lib/core/clock";
import { silentLogger } from "@/lib/core/log";
import type { PostgresStore } from "@/lib/db/store/postgres";
import { RESUME_DUE } from "@/lib/db/store/postgres/waits";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { DUE_WAITS } from "@/lib/db/store/sqlite/waits";
import { startExecutorLoop } from "@/lib/queue/loop";
import { resumeDueWaits } from "@/lib/waits/tick";
import { median, rssMb, root, start } from "./processes";
import type { BenchFigure } from "./types";

const PG_URL = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;
const MANY = Number(process.env.BENCH_WAITS_RUNS ?? 100_000);
const FEW = 1_000;
const DUE = [0, 100, 1_000];
const REPEATS = Math.max(1, Number(process.env.BENCH_WAITS_REPEATS ?? 5));
const RSS_SECONDS = Number(process.env.BENCH_WAITS_RSS_SECONDS ?? 180);
const KEY = Buffer.alloc(32, 3).toString("base64");
const SESSION_SECRET = "bench-waits-session-secret";
const r2 = (v: number) => Math.round(v * 100) / 100;

type Engine = "sqlite" | "postgres";

/** A fresh database of one engine with the app on it, at `now`; `sql` runs statements on it. */
interface Db {
  engine: Engine;
  app: App;
  clock: ManualClock;
  env: Record<string, string>;
  exec(sql: string, params?: unknown[]): Promise<void>;
  all<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Closes the app's store (once), leaving the database. */
  closeApp(): Promise<void>;
  /** Closes the store and removes the database. */
  close(): Promise<void>;
}

const once = (fn: () => Promise<void>) => {
  let done: Promise<void> | null = null;
  return () => (done ??= fn());
};

async function openDb(engine: Engine, now: Date): Promise<Db> {
  const clock = new ManualClock(now);
  if (engine === "sqlite") {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-waits-"));
    const env = { DATA_DIR: dataDir, SECRETS_KEY: KEY, SESSION_SECRET };
    const app = createApp({ env, log: silentLogger, clock });
    const closeApp = once(() => app.close());
    const db = sqliteOf(app.store);
    const params = (p: unknown[]) => p.map((v) => (typeof v === "boolean" ? Number(v) : v));
    return {
      engine,
      app,
      clock,
      env,
      exec: async (sql, p = []) => void db.prepare(sql).run(...params(p)),
      all: async <T>(sql: string, p: unknown[] = []) => db.prepare(sql).all(...params(p)) as T[],
      closeApp,
      close: async () => {
        await closeApp();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const schema = `bench_waits_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = `${PG_URL}${PG_URL!.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-waits-pg-"));
  const env = { DATA_DIR: dataDir, DATABASE_URL: url, DATABASE_POOL_SIZE: "2", SECRETS_KEY: KEY, SESSION_SECRET };
  const app = createApp({ env, log: silentLogger, clock });
  await app.store.ready?.();
  const closeApp = once(() => app.close());
  const pool = (app.store as PostgresStore).pool;
  // SQLite's `?` placeholders, numbered for PostgreSQL.
  const numbered = (sql: string) => {
    let i = 0;
    return sql.replace(/\?/g, () => `$${++i}`);
  };
  return {
    engine,
    app,
    clock,
    env,
    exec: async (sql, p = []) => void (await pool.query(numbered(sql), p)),
    all: async <T>(sql: string, p: unknown[] = []) => (await pool.query(numbered(sql), p)).rows as T[],
    closeApp,
    close: async () => {
      await closeApp();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One real run of `definition` taken to its wait by the executor; its run id. */
async function parkOne(db: Db, name: string, definition: unknown): Promise<string> {
  const applet = await createAppletService(db.app).create({ name, definition: definition });
  const [ingested] = await db.app.store.runs.ingestMany([{ appletId: applet.id, source: "webhook", dedupeKey: null, payloadJson: JSON.stringify({ body: { order: 42 } }), receivedAt: db.clock.now().toISOString(), maxAttempts: 5 }]);
  if (!ingested || ingested instanceof Error) throw new Error(`bench: could not ingest the ${name} run`);
  const loop = startExecutorLoop({ app: db.app, actions: actionRegistry }, { workerId: "bench-waits", concurrency: 1, idleMs: 5 });
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const run = await db.app.store.runs.get(ingested.runId);
      if (run?.status === "waiting") return ingested.runId;
      if (run && run.status !== "queued" && run.status !== "running") throw new Error(`bench: the ${name} run ended ${run.status} instead of waiting`);
      if (Date.now() > deadline) throw new Error(`bench: the ${name} run never reached its wait`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    await loop.stop({ graceMs: 1_000 });
  }
}

const columns = async (db: Db, table: string): Promise<string[]> =>
  db.engine === "sqlite"
    ? (await db.all<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)).map((c) => c.name)
    : (await db.all<{ column_name: string }>("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position", [table])).map((c) => c.column_name);

/** `n` padded: clone ids sort as their numbers. */
const pad = (engine: Engine, n: string) => (engine === "sqlite" ? `printf('%07d', ${n})` : `lpad(${n}::text, 7, '0')`);
/** The ISO time `seconds` after `iso`, as the app writes times. */
const plus = (engine: Engine, iso: string, seconds: string) =>
  engine === "sqlite" ? `strftime('%Y-%m-%dT%H:%M:%fZ', '${iso}', '+' || (${seconds}) || ' seconds')` : `to_char((timestamp '${iso.slice(0, 23)}' + (${seconds}) * interval '1 second'), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const series = (engine: Engine, from: number, to: number) =>
  engine === "sqlite" ? `(WITH RECURSIVE s(n) AS (SELECT ${from} UNION ALL SELECT n + 1 FROM s WHERE n < ${to}) SELECT n FROM s) g` : `generate_series(${from}, ${to}) AS g(n)`;

/**
 * Copies of the template run (its event, run and wait rows) numbered `from`..`to`: ids `w0000001`…,
 * events `we0000001`…; `resumeAt` is the copy's resume time (an SQL expression of `g.n`, or NULL).
 */
async function cloneRuns(db: Db, template: string, from: number, to: number, resumeAt: string | null): Promise<void> {
  const id = `'w' || ${pad(db.engine, "g.n")}`;
  const eventId = `'we' || ${pad(db.engine, "g.n")}`;
  const copy = async (table: string, key: string, replace: Record<string, string>) => {
    const cols = await columns(db, table);
    const select = cols.map((c) => replace[c] ?? `t.${c}`).join(", ");
    await db.exec(`INSERT INTO ${table} (${cols.join(", ")}) SELECT ${select} FROM ${table} t, ${series(db.engine, from, to)} WHERE t.${key} = ?`, [key === "id" && table === "events" ? (await db.all<{ event_id: string }>("SELECT event_id FROM runs WHERE id = ?", [template]))[0]!.event_id : template]);
  };
  await copy("events", "id", { id: eventId, dedupe_key: "NULL" });
  await copy("runs", "id", { id, event_id: eventId });
  await copy("run_waits", "run_id", { run_id: id, resume_at: resumeAt ?? "NULL", timeout_at: "NULL" });
}

/** `n` waiting runs: 90 % delays due a day ahead and on (one a second), 10 % waiting for a call. */
async function seed(db: Db, n: number): Promise<{ delays: number; seconds: number }> {
  const t = performance.now();
  const url = "https://example.com/after-wait";
  const delay = await parkOne(db, "waits a day", { version: 2, trigger: { type: "webhook", config: {} }, steps: [{ id: "pause", type: "wait", kind: "delay", duration: "1d" }, { id: "after", type: "http", config: { url, method: "POST", body: { order: "{{trigger.body.order}}" } } }] });
  const call = await parkOne(db, "waits for a call", { version: 2, trigger: { type: "webhook", config: {} }, steps: [{ id: "paid", type: "wait", kind: "for_call" }, { id: "after", type: "http", config: { url, method: "POST", body: { paid: "{{steps.paid.output}}" } } }] });
  const delays = Math.round(n * 0.9);
  const dayAhead = new Date(db.clock.now().getTime() + 86_400_000).toISOString();
  // Copies in slices, as a real database would have been filled over time (and as a SQLite
  // transaction should stay).
  for (let from = 1; from <= n; from += 20_000) {
    const to = Math.min(n, from + 19_999);
    const split = Math.min(to, delays);
    if (from <= split) await cloneRuns(db, delay, from, split, plus(db.engine, dayAhead, "g.n"));
    if (to > delays) await cloneRuns(db, call, Math.max(from, delays + 1), to, null);
  }
  // The two templates are waiting runs too; they are resumed by no tick here (a day ahead, a call).
  await db.exec(db.engine === "sqlite" ? "ANALYZE" : "VACUUM ANALYZE");
  const counted = await db.app.store.waits.countWaiting();
  if ((counted.delay ?? 0) !== delays + 1 || (counted.for_call ?? 0) !== n - delays + 1) throw new Error(`bench: seeded ${JSON.stringify(counted)}, expected ${delays + 1} delays and ${n - delays + 1} calls`);
  return { delays, seconds: (performance.now() - t) / 1000 };
}

const idRange = (d: number) => [`w${"1".padStart(7, "0")}`, `w${String(d).padStart(7, "0")}`];

/** The first `d` delays become due (their time a minute ago). */
async function makeDue(db: Db, d: number): Promise<void> {
  if (d === 0) return;
  const ago = new Date(db.clock.now().getTime() - 60_000).toISOString();
  await db.exec("UPDATE run_waits SET resume_at = ? WHERE run_id >= ? AND run_id <= ?", [ago, ...idRange(d)]);
}

/** The `d` resumed runs put back as they were: waiting, their wait unresolved and a day ahead again. */
async function putBack(db: Db, d: number): Promise<void> {
  if (d === 0) return;
  const dayAhead = new Date(db.clock.now().getTime() + 86_400_000).toISOString();
  const n = db.engine === "sqlite" ? "CAST(substr(run_id, 2) AS INTEGER)" : "substr(run_id, 2)::int";
  await db.exec(`UPDATE run_waits SET resolution = NULL, resolved_at = NULL, resolved_by = NULL, resume_at = ${plus(db.engine, dayAhead, n)} WHERE run_id >= ? AND run_id <= ?`, idRange(d));
  await db.exec("UPDATE runs SET status = 'waiting', next_attempt_at = NULL WHERE id >= ? AND id <= ?", idRange(d));
  if (db.engine === "postgres") await db.exec("VACUUM run_waits, runs");
}

/** The tick's plan: PostgreSQL's pages touched and execution time, SQLite's chosen index. */
async function explain(db: Db, due: number): Promise<{ pages: number; ms: number; text: string }> {
  const now = db.clock.now().toISOString();
  if (db.engine === "sqlite") {
    const plan = await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${DUE_WAITS}`, [now, Math.max(due, 1)]);
    return { pages: NaN, ms: NaN, text: plan.map((p) => p.detail).join("; ") };
  }
  const client = await (db.app.store as PostgresStore).pool.connect();
  try {
    await client.query("BEGIN");
    // One statement for all the due (the tick takes them 200 at a time): what they cost together.
    const rows = (await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) ${RESUME_DUE}`, [now, Math.max(due, 1)])).rows.map((r) => r["QUERY PLAN"]);
    const top = rows.find((l) => /Buffers:/.test(l)) ?? "";
    const pages = [...top.matchAll(/(?:hit|read|dirtied|written)=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    return { pages, ms: Number(/Execution Time: ([\d.]+)/.exec(rows.join("\n"))?.[1] ?? NaN), text: rows.join("\n") };
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

interface TickCost {
  waiting: number;
  due: number;
  ms: number;
  pages: number;
  planMs: number;
  plan: string;
}

/**
 * The tick with each due count among `waiting` runs; with `rss`, then a production worker over the
 * same database (all waiting again, none due) for RSS_SECONDS.
 */
async function tickCosts(engine: Engine, waiting: number, now: Date, rss = false): Promise<{ costs: TickCost[]; rss: { s: number; mb: number }[] }> {
  const db = await openDb(engine, now);
  try {
    const seeded = await seed(db, waiting);
    console.log(`${engine}: ${waiting.toLocaleString("en-US")} waiting runs seeded in ${r2(seeded.seconds)} s`);
    const costs: TickCost[] = [];
    for (const due of DUE) {
      const times: number[] = [];
      let plan = { pages: NaN, ms: NaN, text: "" };
      for (let i = 0; i < REPEATS; i++) {
        await makeDue(db, due);
        if (i === 0) plan = await explain(db, due);
        const t = performance.now();
        const resumed = await resumeDueWaits(db.app);
        times.push(performance.now() - t);
        if (resumed !== due) throw new Error(`bench: ${engine}, ${waiting} waiting, ${due} due: the tick resumed ${resumed}`);
        await putBack(db, due);
      }
      console.log(`\n${engine}, ${waiting.toLocaleString("en-US")} waiting, ${due} due: ticks ${times.map(r2).join(", ")} ms; plan:\n${plan.text}\n`);
      costs.push({ waiting, due, ms: median(times), pages: plan.pages, planMs: plan.ms, plan: plan.text });
    }
    return { costs, rss: rss ? await workerRss(db) : [] };
  } finally {
    await db.close().catch(() => {});
  }
}

/** A production worker on `db` (this process lets go of it first): its VmRSS every 5 s for RSS_SECONDS, from 10 s after its start. */
async function workerRss(db: Db): Promise<{ s: number; mb: number }[]> {
  await db.closeApp();
  const proc = start("dist/worker.mjs", { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: "production", ...db.env, INBOUND_EMAIL: "false", WORKER_NICE: "0", LOG_LEVEL: "warn" });
  const samples: { s: number; mb: number }[] = [];
  try {
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 10_000));
    while (Date.now() - t0 <= 10_000 + RSS_SECONDS * 1000) {
      if (proc.child.exitCode !== null) throw new Error(`bench: the worker exited with ${proc.child.exitCode}`);
      samples.push({ s: Math.round((Date.now() - t0) / 1000), mb: rssMb(proc.pid).now });
      await new Promise((r) => setTimeout(r, 5_000));
    }
  } finally {
    await proc.stop();
  }
  console.log(`${db.engine}: worker RSS over ${MANY.toLocaleString("en-US")} waiting runs (s after start: MB): ${samples.map((x) => `${x.s}: ${r2(x.mb)}`).join(", ")}`);
  return samples;
}

export default async function bench(): Promise<BenchFigure[]> {
  if (!existsSync(path.join(root, "dist/worker.mjs"))) throw new Error("bench: no production build of the worker (dist/worker.mjs); run `pnpm build` first (the bench measures the worker `pnpm start` runs)");
  const engines: Engine[] = PG_URL ? ["sqlite", "postgres"] : ["sqlite"];
  if (!PG_URL) console.log("waits: PostgreSQL skipped, set BENCH_POSTGRES_URL or TEST_POSTGRES_URL (postgres://…)");
  const figures: BenchFigure[] = [];
  const now = new Date();
  const k = (n: number) => n.toLocaleString("en-US");
  for (const engine of engines) {
    const few = (await tickCosts(engine, FEW, now)).costs;
    const many = await tickCosts(engine, MANY, now, true);
    for (const m of many.costs) {
      const f = few.find((x) => x.due === m.due)!;
      const scan = engine === "sqlite" ? m.plan : (/Index Scan using run_waits_due_idx[^\n]*/.exec(m.plan)?.[0]?.replace(/\s+\(cost=[^)]*\)/, "").trim() ?? "no index scan of run_waits_due_idx");
      figures.push({
        name: `${engine}: tick with ${k(m.due)} due among ${k(MANY)} waiting`,
        unit: "ms",
        value: m.ms,
        notes: `${r2(f.ms)} ms with ${k(m.due)} due among ${k(FEW)} waiting; median of ${REPEATS} ticks through the store${m.due === 0 ? `; plan: ${scan}` : ""}`,
      });
      if (engine === "postgres") {
        figures.push({
          name: `postgres: the tick's statement with ${k(m.due)} due among ${k(MANY)} waiting, pages touched`,
          unit: "pages",
          value: m.pages,
          notes: `${f.pages} with ${k(m.due)} due among ${k(FEW)} waiting; EXPLAIN (ANALYZE, BUFFERS) ${r2(m.planMs)} ms${m.due === 0 ? `; ${scan}` : ""}`,
        });
      }
    }
    const rss = many.rss;
    const first = rss[0]!.mb;
    const last = rss.at(-1)!.mb;
    figures.push({
      name: `${engine}: production worker RSS with ${k(MANY)} runs waiting, after ${RSS_SECONDS} s of ticks`,
      unit: "MB",
      value: last,
      notes: `${r2(first)} MB 10 s after its start, highest ${r2(Math.max(...rss.map((x) => x.mb)))} MB, lowest ${r2(Math.min(...rss.map((x) => x.mb)))} MB; ${rss.length} samples of VmRSS 5 s apart`,
    });
  }
  return figures;
}
