/**
 * The PostgreSQL claim (lib/db/store/postgres/queue-sql.ts CLAIM) against two backlogs:
 *  1. 100,000 queued runs of one applet (and one queued run of another);
 *  2. 1,000 busy applets (each with a run running and 10 queued) and one free applet.
 * Each figure is the median of 200 claims (each released again, so the backlog stays), through
 * the store, plus EXPLAIN (ANALYZE, BUFFERS) of one claim: the pages it touched say whether it
 * stayed a few index seeks. Needs BENCH_POSTGRES_URL or TEST_POSTGRES_URL.
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore } from "@/lib/db/store/postgres";
import { CLAIM } from "@/lib/db/store/postgres/queue-sql";
import type { BenchFigure } from "./types";

const URL = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;
const NOW = "2026-03-07T12:00:00.000Z";

async function scenario(name: string, seed: string, expectApplet: string): Promise<BenchFigure[]> {
  const schema = `bench_claim_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const store = openPostgresStore({ url: URL!, schema, poolSize: 2, alertPolicy });
  try {
    await store.ready();
    await store.pool.query(seed);
    await store.pool.query("ANALYZE");
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      const run = await store.runs.claim("bench", new Date(NOW));
      times.push(performance.now() - t);
      if (run?.appletId !== expectApplet) throw new Error(`bench: ${name}: claimed ${run?.appletId ?? "nothing"}, expected ${expectApplet}`);
      await store.runs.release(run, new Date(NOW));
    }
    times.sort((a, b) => a - b);
    const plan = (await store.pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) ${CLAIM}`, ["bench", NOW, "explain"])).rows.map((r) => r["QUERY PLAN"]);
    const top = plan.find((l) => /Buffers:/.test(l)) ?? "";
    const hits = [...top.matchAll(/(?:hit|read|dirtied|written)=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    const exec = Number(/Execution Time: ([\d.]+)/.exec(plan.join("\n"))?.[1] ?? NaN);
    console.log(`\n${name}: EXPLAIN (ANALYZE, BUFFERS)\n${plan.join("\n")}\n`);
    return [
      { name: `claim, ${name}: median of 200`, unit: "ms", value: times[100]!, notes: `p99 ${Math.round(times[198]! * 100) / 100} ms, through the store (one round trip)` },
      { name: `claim, ${name}: EXPLAIN ANALYZE execution`, unit: "ms", value: exec, notes: `${hits} buffer pages touched (${top.trim()})` },
    ];
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

const applets = (n: number, prefix: string) => `INSERT INTO applets (id, name, trigger_type, definition, webhook_token, created_at, updated_at)
  SELECT '${prefix}' || lpad(g::text, 5, '0'), 'a', 'webhook', '{}', '${prefix}-tok-' || g, '${NOW}', '${NOW}' FROM generate_series(1, ${n}) g;`;
const runs = (select: string) => `INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at)
  SELECT 'e-' || id, applet_id, 'webhook', '{}', t, t, t FROM (${select}) s;
  INSERT INTO runs (id, applet_id, event_id, status, next_attempt_at, locked_by, created_at, updated_at)
  SELECT id, applet_id, 'e-' || id, status, CASE WHEN status = 'queued' THEN t END, CASE WHEN status = 'running' THEN 'someone' END, t, t FROM (${select}) s;`;
const stamp = (g: string) => `to_char(timestamp '2026-03-01' + ${g} * interval '1 ms', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export default async function bench(): Promise<BenchFigure[]> {
  if (!URL) {
    console.log("pg-claim: skipped, set BENCH_POSTGRES_URL or TEST_POSTGRES_URL (postgres://…)");
    return [];
  }
  const backlog = `${applets(1, "big")} ${applets(1, "small")}
    ${runs(`SELECT 'r' || lpad(g::text, 7, '0') AS id, 'big00001' AS applet_id, 'queued' AS status, ${stamp("g")} AS t FROM generate_series(1, 100000) g`)}
    ${runs(`SELECT 'rs1' AS id, 'small00001' AS applet_id, 'queued' AS status, ${stamp("200000")} AS t`)}`;
  const busy = `${applets(1000, "busy")} ${applets(1, "free")}
    ${runs(`SELECT 'b' || lpad(g::text, 7, '0') AS id, 'busy' || lpad((g % 1000 + 1)::text, 5, '0') AS applet_id, CASE WHEN g <= 1000 THEN 'running' ELSE 'queued' END AS status, ${stamp("g")} AS t FROM generate_series(1, 11000) g`)}
    ${runs(`SELECT 'f1' AS id, 'free00001' AS applet_id, 'queued' AS status, ${stamp("50000")} AS t`)}`;
  return [
    ...(await scenario("100,000 queued runs of one applet", backlog, "big00001")),
    ...(await scenario("1,000 busy applets (1 running + 10 queued each), 1 free", busy, "free00001")),
  ];
}
