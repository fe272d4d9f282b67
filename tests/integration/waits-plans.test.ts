/**
 * The tick's part for waits (lib/waits/tick.ts → store.waits.resumeDue) reads only the due waits,
 * through run_waits_due_idx (the partial index on unresolved waits' resume_at), so its cost follows
 * the runs due and not the runs waiting: with 20,000 runs waiting a day ahead (and 2,000 waiting
 * for a call, outside the index), a tick with nothing due touches a couple of index pages, and one
 * with 100 due touches pages in proportion to those 100. On PostgreSQL also as a generic plan: the
 * store runs it as a named prepared statement, which PostgreSQL plans once for any parameters after
 * a few runs (the worker ticks every second). Checked on a real SQLite file and real PostgreSQL.
 */
import type Database from "better-sqlite3";
import type pg from "pg";
import { afterEach, describe, expect, test } from "vitest";
import { RESUME_DUE } from "@/lib/db/store/postgres/waits";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { DUE_WAITS } from "@/lib/db/store/sqlite/waits";
import { createTestApp } from "../helpers/db";
import { createTestPostgresStore, noPostgres } from "../helpers/postgres";

const NOW = "2026-03-07T12:00:00.000Z";
const WAITING = 20_000;
const CALLS = 2_000;
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * The rows of WAITING runs parked on a delay (due one a second from a day ahead) and CALLS parked
 * on a call; `due` of the delays' times moved a minute before NOW. The same text on both engines
 * but for its series and its time arithmetic.
 */
function seedSql(engine: "sqlite" | "postgres", due: number): string[] {
  const series = engine === "sqlite" ? `(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${WAITING + CALLS}) SELECT n FROM s) g` : `generate_series(1, ${WAITING + CALLS}) AS g(n)`;
  const id = engine === "sqlite" ? "printf('w%07d', g.n)" : "'w' || lpad(g.n::text, 7, '0')";
  const later = engine === "sqlite" ? `strftime('%Y-%m-%dT%H:%M:%fZ', '${NOW}', '+1 day', '+' || g.n || ' seconds')` : `to_char(timestamp '${NOW.slice(0, 23)}' + interval '1 day' + g.n * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const ago = new Date(Date.parse(NOW) - 60_000).toISOString();
  return [
    `INSERT INTO applets (id, name, trigger_type, definition, webhook_token, created_at, updated_at) VALUES ('a', 'a', 'webhook', '{}', 'tok-a', '${NOW}', '${NOW}')`,
    `INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at) SELECT 'e' || ${id}, 'a', 'webhook', '{}', '${NOW}', '${NOW}', '${NOW}' FROM ${series}`,
    `INSERT INTO runs (id, applet_id, event_id, status, steps, error, created_at, updated_at) SELECT ${id}, 'a', 'e' || ${id}, 'waiting', '[]', 'waiting', '${NOW}', '${NOW}' FROM ${series}`,
    `INSERT INTO run_waits (run_id, seq, applet_id, step_id, kind, resume_at, resume_as, detail, created_at, updated_at)
       SELECT ${id}, 0, 'a', 'pause', CASE WHEN g.n <= ${WAITING} THEN 'delay' ELSE 'for_call' END,
         CASE WHEN g.n <= ${due} THEN '${ago}' WHEN g.n <= ${WAITING} THEN ${later} END, CASE WHEN g.n <= ${WAITING} THEN 'time' END, '{}', '${NOW}', '${NOW}' FROM ${series}`,
  ];
}

describe("the tick's plan for due waits on SQLite", () => {
  const plan = (db: Database.Database) => (db.prepare(`EXPLAIN QUERY PLAN ${DUE_WAITS}`).all(NOW, 200) as { detail: string }[]).map((r) => r.detail);

  test("with and without statistics it searches run_waits_due_idx for the due range, never scans the waiting runs, and sorts nothing", () => {
    const app = createTestApp();
    cleanups.push(() => app.cleanup());
    const db = sqliteOf(app.store);
    for (const s of seedSql("sqlite", 100)) db.exec(s);
    for (const stats of [false, true]) {
      if (stats) db.exec("ANALYZE");
      const details = plan(db);
      expect(details, `statistics: ${stats}`).toEqual([expect.stringMatching(/^SEARCH run_waits USING INDEX run_waits_due_idx \(resume_at[<>]\?( AND resume_at<\?)?\)$/)]);
    }
  });

  test("a tick over 22,000 waiting runs resumes the 100 due, once", async () => {
    const app = createTestApp({ start: NOW });
    cleanups.push(() => app.cleanup());
    const db = sqliteOf(app.store);
    for (const s of seedSql("sqlite", 100)) db.exec(s);
    db.exec("ANALYZE");
    const due = db.prepare(DUE_WAITS);
    expect(due.all(NOW, 1_000)).toHaveLength(100);
    expect(await app.store.waits.resumeDue(new Date(NOW), 200)).toBe(100);
    expect(await app.store.waits.resumeDue(new Date(NOW), 200)).toBe(0);
    expect(db.prepare("SELECT COUNT(*) AS n FROM runs WHERE status = 'queued'").get()).toEqual({ n: 100 });
  });
});

describe.skipIf(noPostgres)(`the tick's plan for due waits on PostgreSQL${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  /** Pages the whole statement touched, and its plan, run for real in a transaction rolled back. */
  async function explain(c: pg.PoolClient, statement: string): Promise<{ pages: number; rows: number; plan: string }> {
    await c.query("BEGIN");
    try {
      const json = (await c.query<{ "QUERY PLAN": [{ Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number; "Actual Rows": number } }] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement}`)).rows[0]!["QUERY PLAN"][0].Plan;
      const plan = (await c.query<{ "QUERY PLAN": string }>(`EXPLAIN ${statement}`)).rows.map((r) => r["QUERY PLAN"]).join("\n");
      return { pages: json["Shared Hit Blocks"] + json["Shared Read Blocks"], rows: json["Actual Rows"], plan };
    } finally {
      await c.query("ROLLBACK");
    }
  }

  const modes = {
    custom: "planned for its parameters each time",
    generic: "planned once for any parameters",
    auto: "as PostgreSQL plans it by itself after ten ticks with 100 due",
  };
  for (const mode of ["custom", "generic", "auto"] as const) {
    test(`${modes[mode]}: nothing due touches a few pages, 100 due touch pages for those 100, through run_waits_due_idx and never a scan of the waiting`, async () => {
      const store = await createTestPostgresStore();
      cleanups.push(() => store.cleanup());
      const c = await store.pool.connect();
      cleanups.push(() => c.release());
      for (const s of seedSql("postgres", 100)) await c.query(s);
      await c.query("VACUUM ANALYZE");
      if (mode !== "auto") await c.query(`SET plan_cache_mode = ${mode === "generic" ? "force_generic_plan" : "force_custom_plan"}`);
      await c.query(`PREPARE due_tick(text, int) AS ${RESUME_DUE}`);
      if (mode === "auto") {
        for (let i = 0; i < 10; i++) {
          await c.query("BEGIN");
          expect((await c.query(`EXECUTE due_tick('${NOW}', 200)`)).rowCount).toBe(100);
          await c.query("ROLLBACK");
        }
      }

      const none = await explain(c, `EXECUTE due_tick('${new Date(Date.parse(NOW) - 3_600_000).toISOString()}', 200)`);
      expect(none.rows).toBe(0);
      expect(none.plan).toMatch(/Index Scan using run_waits_due_idx on run_waits/);
      expect(none.plan).not.toMatch(/Seq Scan|Sort/);
      // The root page and one leaf of the index (a sequential scan would read every page of the 22,000 waits).
      expect(none.pages).toBeLessThanOrEqual(5);

      const hundred = await explain(c, `EXECUTE due_tick('${NOW}', 200)`);
      expect(hundred.rows).toBe(100);
      expect(hundred.plan).toMatch(/Index Scan using run_waits_due_idx on run_waits/);
      expect(hundred.plan).not.toMatch(/Seq Scan/);
      // Each resumed run costs its wait's row and its run's row and their indexes' entries: tens of
      // pages a run, whatever the number waiting.
      expect(hundred.pages / 100).toBeLessThan(60);
    });
  }
});
