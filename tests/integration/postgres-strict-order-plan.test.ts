import { describe, expect, test } from "vitest";
import type { PostgresStore } from "@/lib/db/store/postgres";
import * as Q from "@/lib/db/store/postgres/queue-sql";
import { createTestPostgresStore, noPostgres } from "../helpers/postgres";

/**
 * Strict order costs the claim nothing for applets without it: "is this lane taken?" stays one seek
 * of runs_running_idx, whose predicate now also holds the waiting runs that keep their lane
 * (drizzle-pg/0024). Measured on a queue of 6,000 runs over 60 applets, half of them running, so
 * the claim probes every applet's lane: the pages it reads are those of the probe that asked for
 * running runs only.
 */

const T0 = new Date("2026-03-07T12:00:00.000Z");
const literally = (sql: string, params: readonly string[]) => sql.replace(/\$(\d)/g, (_, d: string) => params[Number(d) - 1]!);
type Explained = { "QUERY PLAN": [{ Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number } }] };

async function backlog(store: PostgresStore) {
  for (let a = 0; a < 60; a++) {
    await store.applets.insert({ id: `a${a}`, name: `a${a}`, enabled: true, triggerType: "webhook", definition: { version: 1 }, webhookToken: `tok-a${a}`, now: T0.toISOString() });
  }
  const c = await store.pool.connect();
  try {
    await c.query(`INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at)
      SELECT 'e' || g, 'a' || (g % 60), 'webhook', '{}', t, t, t
      FROM generate_series(1, 6000) g, LATERAL (SELECT to_char(($1::timestamptz + g * interval '1 ms') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t) ts`, [T0.toISOString()]);
    await c.query(`INSERT INTO runs (id, applet_id, event_id, status, next_attempt_at, steps, created_at, updated_at)
      SELECT 'r' || substr(id, 2), applet_id, id, 'queued', received_at, '[]', received_at, received_at FROM events`);
    // Every even applet but a0 has a running run; a0 and a1 have a waiting run each (applets without strict order: they hold nothing).
    await c.query(`UPDATE runs SET status = 'running', claim_token = 't' || id, locked_by = 'w', locked_at = created_at, next_attempt_at = NULL
      WHERE id IN (SELECT DISTINCT ON (applet_id) id FROM runs WHERE (substr(applet_id, 2))::int % 2 = 0 AND applet_id <> 'a0' ORDER BY applet_id, created_at)`);
    await c.query("UPDATE runs SET status = 'waiting', next_attempt_at = NULL WHERE id IN (SELECT DISTINCT ON (applet_id) id FROM runs WHERE applet_id IN ('a0', 'a1') ORDER BY applet_id, created_at)");
    await c.query("ANALYZE runs");
  } finally {
    c.release();
  }
}

describe.skipIf(noPostgres)(`PostgreSQL claim with strict order${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  test("the lane check is still one seek of runs_running_idx per lane, reading what the running-only check read; a lane a waiting run holds is skipped", async () => {
    const store = await createTestPostgresStore();
    const c = await store.pool.connect();
    try {
      await backlog(store);
      const later = new Date(T0.getTime() + 60_000);
      const now = `'${later.toISOString()}'`;
      const params = ["'w'", now, "'probe'"];
      const current = literally(Q.CLAIM, params);
      // The same statement with the check as it was before strict order existed.
      const before = current.split(Q.HOLDS_LANE("x")).join("x.status = 'running'");
      expect(before).not.toBe(current);
      const plan = (await c.query<{ "QUERY PLAN": string }>(`EXPLAIN ${current}`)).rows.map((r) => r["QUERY PLAN"]).join("\n");
      // Every lane probe is an index (only) scan of runs_running_idx; nothing reads the runs table whole.
      expect(plan).not.toMatch(/Seq Scan on runs/);
      const probes = plan.match(/Index (Only )?Scan using runs_running_idx on runs x/g) ?? [];
      expect(probes.length).toBeGreaterThanOrEqual(2);
      const pages = async (sql: string) => {
        await c.query("BEGIN");
        try {
          const p = (await c.query<Explained>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`)).rows[0]!["QUERY PLAN"][0].Plan;
          return p["Shared Hit Blocks"] + p["Shared Read Blocks"];
        } finally {
          await c.query("ROLLBACK");
        }
      };
      // Applets without the option (no run holds a lane): the same pages as the running-only check.
      // (Each measured after a first run: the first statement on fresh rows also sets their hint bits.)
      await pages(current);
      await pages(before);
      const [withCheck, withoutCheck] = [await pages(current), await pages(before)];
      console.log(`claim over 6,000 queued runs, 30 lanes running: ${withCheck} pages with the strict-order check, ${withoutCheck} with the running-only check\n${plan}`);
      expect(withCheck).toBeLessThanOrEqual(withoutCheck + 2);

      // a0's waiting run now holds its lane (strict order): the claim skips a0 and takes a1, whose waiting run does not.
      await c.query("UPDATE runs SET holds_lane = 1 WHERE applet_id = 'a0' AND status = 'waiting'");
      const held = await pages(current);
      console.log(`with a0's lane held: ${held} pages`);
      const claimedApplets: string[] = [];
      for (let run = await store.runs.claim("w", later); run; run = await store.runs.claim("w", later)) claimedApplets.push(run.appletId);
      // The 30 odd applets' lanes (a1's waiting run holds nothing), never a0's.
      expect(claimedApplets.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `a${2 * i + 1}`).sort());
    } finally {
      c.release();
      await store.cleanup();
    }
  }, 60_000);
});
