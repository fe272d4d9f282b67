/**
 * `postgres` (porsager) against `pg` (node-postgres) on the queue's hot paths, same SQL
 * (lib/db/store/postgres/queue-sql.ts), same database, one run:
 *  1. ingest: one webhook = BEGIN; insert event; insert run; COMMIT, at 1, 8 and 32 concurrent
 *     requests (a pool of min(concurrency, 10) connections);
 *  2. ingest as one statement (INGEST: the event and its run in one CTE, no BEGIN/COMMIT);
 *  3. claim + finish-and-claim: each worker slot claims, then loops BEGIN; finish (fenced) and count
 *     the applet; claim the next; COMMIT, at 1 and 4 slots, over a backlog spread on 20 applets.
 * pg runs every statement as a named prepared statement; postgres prepares them itself. Needs
 * BENCH_POSTGRES_URL or TEST_POSTGRES_URL; tables go in a schema of their own, dropped at the end.
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import pg from "pg";
import postgres from "postgres";
import { newId } from "@/lib/core/ids";
import { migratePostgres, type MigrationSession } from "@/lib/db/store/postgres/migrate";
import { CLAIM, FINISH_AND_COUNT, INGEST, INSERT_EVENT, INSERT_RUN } from "@/lib/db/store/postgres/queue-sql";
import type { BenchFigure } from "./types";

const URL = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const APPLETS = 20;
const r1 = (v: number) => Math.round(v * 10) / 10;

/** The three operations, written once per driver. */
interface Driver {
  name: string;
  ingestTx(appletId: string): Promise<void>;
  ingestOne(appletId: string): Promise<void>;
  claim(worker: string): Promise<{ id: string; claim_token: string } | null>;
  finishAndClaim(run: { id: string; claim_token: string }, worker: string): Promise<{ id: string; claim_token: string } | null>;
  end(): Promise<void>;
}

const now = () => new Date().toISOString();
const ingestArgs = (appletId: string) => [newId(), appletId, "webhook", null, '{"body":{"n":1}}', now()];

function porsager(url: string, schema: string, max: number, syncCommit: string): Driver {
  const sql = postgres(url, { max, connection: { search_path: schema, synchronous_commit: syncCommit }, onnotice: () => undefined });
  const p = { prepare: true } as const;
  return {
    name: "postgres",
    ingestTx: async (appletId) => {
      await sql.begin(async (tx) => {
        const a = ingestArgs(appletId);
        const ev = await tx.unsafe(INSERT_EVENT, a as never[], p);
        if (ev.count === 1) await tx.unsafe(INSERT_RUN, [newId(), appletId, a[0], 5, a[5]] as never[], p);
      });
    },
    ingestOne: async (appletId) => {
      await sql.unsafe(INGEST, [...ingestArgs(appletId), newId(), 5] as never[], p);
    },
    claim: async (worker) => {
      const [row] = await sql.unsafe(CLAIM, [worker, now(), randomUUID()], p);
      return (row as { id: string; claim_token: string } | undefined) ?? null;
    },
    // Both statements are sent at once (postgres pipelines the queries of a transaction that
    // returns them as an array): one round trip for BEGIN, finish, claim, COMMIT.
    finishAndClaim: async (run, worker) => {
      const at = now();
      const [, claimed] = await sql.begin((tx) => [
        tx.unsafe(FINISH_AND_COUNT, [run.id, run.claim_token, "succeeded", "[]", null, at], p),
        tx.unsafe(CLAIM, [worker, at, randomUUID()], p),
      ]);
      return ((claimed as unknown as { id: string; claim_token: string }[])[0]) ?? null;
    },
    end: () => sql.end({ timeout: 5 }),
  };
}

function nodePostgres(url: string, schema: string, max: number, syncCommit: string): Driver {
  const pool = new pg.Pool({ connectionString: url, max, options: `-c search_path=${schema} -c synchronous_commit=${syncCommit}` });
  const q = (client: pg.PoolClient | pg.Pool, name: string, text: string, values: unknown[]) => client.query({ name, text, values });
  const tx = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    const c = await pool.connect();
    try {
      await c.query("BEGIN");
      const out = await fn(c);
      await c.query("COMMIT");
      return out;
    } catch (err) {
      await c.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  };
  return {
    name: "pg",
    ingestTx: (appletId) =>
      tx(async (c) => {
        const a = ingestArgs(appletId);
        const ev = await q(c, "insert_event", INSERT_EVENT, a);
        if (ev.rowCount === 1) await q(c, "insert_run", INSERT_RUN, [newId(), appletId, a[0], 5, a[5]]);
      }),
    ingestOne: async (appletId) => {
      await q(pool, "ingest", INGEST, [...ingestArgs(appletId), newId(), 5]);
    },
    claim: async (worker) => (await q(pool, "claim", CLAIM, [worker, now(), randomUUID()])).rows[0] ?? null,
    finishAndClaim: (run, worker) =>
      tx(async (c) => {
        await q(c, "finish", FINISH_AND_COUNT, [run.id, run.claim_token, "succeeded", "[]", null, now()]);
        return (await q(c, "claim", CLAIM, [worker, now(), randomUUID()])).rows[0] ?? null;
      }),
    end: () => pool.end(),
  };
}

/** Runs `loops` concurrent copies of `op` for SECONDS; operations per second and p99 latency. */
async function drive(loops: number, op: (loop: number, i: number) => Promise<boolean>): Promise<{ perSecond: number; p99: number; count: number; cpuUs: number }> {
  const latencies: number[] = [];
  const cpu = process.cpuUsage();
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const t = performance.now();
        if (!(await op(loop, i))) break;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  latencies.sort((a, b) => a - b);
  return {
    perSecond: latencies.length / elapsed,
    p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    count: latencies.length,
    cpuUs: (used.user + used.system) / Math.max(1, latencies.length),
  };
}

export default async function bench(): Promise<BenchFigure[]> {
  if (!URL) {
    console.log("pg-drivers: skipped, set BENCH_POSTGRES_URL or TEST_POSTGRES_URL (postgres://…)");
    return [];
  }
  const schema = `bench_pg_drivers_${process.pid}`;
  const admin = postgres(URL, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  const setup = postgres(URL, { max: 1, connection: { search_path: schema }, onnotice: () => undefined });
  const session: MigrationSession = { exec: (t) => setup.unsafe(t) as never, query: (t, p) => setup.unsafe(t, p as never[]) as never };
  await migratePostgres(session);
  const appletIds = Array.from({ length: APPLETS }, (_, i) => `applet-${String(i).padStart(2, "0")}`);
  for (const id of appletIds) {
    await setup`INSERT INTO applets (id, name, trigger_type, definition, webhook_token, created_at, updated_at)
                VALUES (${id}, ${id}, 'webhook', '{}', ${"tok-" + id}, ${now()}, ${now()})`;
  }
  const figures: BenchFigure[] = [];
  const reset = () => setup.unsafe("TRUNCATE runs, events; UPDATE applets SET run_count = 0");
  try {
    // synchronous_commit on: what a webhook pays (a WAL flush per commit, the same for both
    // drivers); off: the flush left out, so what remains is mostly each driver's own cost.
    for (const [syncCommit, make] of [["on", porsager], ["on", nodePostgres], ["off", porsager], ["off", nodePostgres]] as const) {
      const tag = `synchronous_commit=${syncCommit}`;
      for (const c of [1, 8, 32]) {
        await reset();
        const d = make(URL, schema, Math.min(c, 10), syncCommit);
        const r = await drive(c, async (loop, i) => (await d.ingestTx(appletIds[(loop + i) % APPLETS]!), true));
        figures.push({ name: `${d.name} (${syncCommit}): ingest (BEGIN, event, run, COMMIT), ${c} concurrent`, unit: "webhooks/s", value: r.perSecond, notes: `${tag}, p99 ${r1(r.p99)} ms, client CPU ${Math.round(r.cpuUs)} µs/op` });
        await d.end();
      }
      for (const c of [1, 32]) {
        await reset();
        const d = make(URL, schema, Math.min(c, 10), syncCommit);
        const r = await drive(c, async (loop, i) => (await d.ingestOne(appletIds[(loop + i) % APPLETS]!), true));
        figures.push({ name: `${d.name} (${syncCommit}): ingest as one statement, ${c} concurrent`, unit: "webhooks/s", value: r.perSecond, notes: `${tag}, p99 ${r1(r.p99)} ms, client CPU ${Math.round(r.cpuUs)} µs/op` });
        await d.end();
      }
      for (const slots of [1, 4]) {
        await reset();
        // A backlog the slots cannot drain in SECONDS, spread over the applets.
        await setup.unsafe(`INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at)
          SELECT 'e' || g, 'applet-' || lpad((g % ${APPLETS})::text, 2, '0'), 'webhook', '{}', to_char(now() - interval '1 hour' + g * interval '1 ms', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'
          FROM generate_series(1, 50000) g;
          INSERT INTO runs (id, applet_id, event_id, status, next_attempt_at, created_at, updated_at)
          SELECT 'r' || lpad(g::text, 8, '0'), applet_id, id, 'queued', received_at, received_at, received_at FROM events e, LATERAL (SELECT substr(e.id, 2)::int AS g) x;
          ANALYZE runs`);
        const d = make(URL, schema, slots, syncCommit);
        const held: ({ id: string; claim_token: string } | null)[] = [];
        const r = await drive(slots, async (loop) => {
          const run = held[loop];
          held[loop] = run ? await d.finishAndClaim(run, `w${loop}`) : await d.claim(`w${loop}`);
          return true;
        });
        figures.push({ name: `${d.name} (${syncCommit}): claim, then finish-and-claim transactions, ${slots} slot(s)`, unit: "runs/s", value: r.perSecond, notes: `${tag}, p99 ${r1(r.p99)} ms, client CPU ${Math.round(r.cpuUs)} µs/op, 50,000 queued on ${APPLETS} applets` });
        await d.end();
      }
    }
  } finally {
    await setup.end({ timeout: 5 });
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end({ timeout: 5 });
  }
  return figures;
}
