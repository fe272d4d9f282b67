/**
 * The queue's SQLite statements read through the indexes they were written for, whatever other
 * indexes on `runs` exist. runs_status_created_idx (status, created_at); without
 * statistics SQLite's planner then chose it for the claim's loose index scan, so every step read
 * and sorted every queued run: a claim of 4 ms at 2,000 queued runs and seconds under a webhook
 * backlog, inside the worker's finish-and-claim write transaction, which the web process's ingest
 * waited on with its event loop blocked (bench: ingest 7,319 → 734 req/s, end to end 1,504 → 197
 * runs/s). Checked on a real file with a backlog, through EXPLAIN QUERY PLAN.
 */
import Database from "better-sqlite3";
import { afterEach, describe, expect, test } from "vitest";
import { CLAIM_SQL } from "@/lib/db/store/sqlite/runs";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { createTestApp, webhookToHttp, type TestApp } from "../helpers/db";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function backlog(): Promise<{ app: TestApp; db: Database.Database }> {
  const app = createTestApp();
  cleanups.push(() => app.cleanup());
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await app.applets.create({ name: `a${i}`, definition: webhookToHttp("https://sink.test/in") })).id);
  const at = app.clock.now().getTime();
  for (let b = 0; b < 4; b++) {
    await app.store.runs.ingestMany(
      Array.from({ length: 250 }, (_, k) => ({
        appletId: ids[k % ids.length]!,
        source: "webhook" as const,
        dedupeKey: null,
        payloadJson: "{}",
        receivedAt: new Date(at - 10_000 + b * 250 + k).toISOString(),
        maxAttempts: 3,
      })),
    );
  }
  const db = sqliteOf(app.store);
  db.exec("ANALYZE"); // with statistics too: the plan must not depend on whether they exist
  return { app, db };
}

const plan = (db: Database.Database, sql: string, params: Record<string, unknown> | unknown[]) => {
  const stmt = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  const rows = (Array.isArray(params) ? stmt.all(...params) : stmt.all(params)) as { detail: string }[];
  return rows.map((r) => r.detail);
};

describe("the SQLite queue's query plans", () => {
  test("the claim enumerates applets and finds each head through runs_queued_idx, never by reading every queued run", async () => {
    const { db } = await backlog();
    for (const stats of [true, false]) {
      if (!stats) db.exec("DROP TABLE IF EXISTS sqlite_stat1; ANALYZE sqlite_schema");
      const details = plan(db, CLAIM_SQL, { worker: "w", now: new Date().toISOString(), token: "t" });
      const onRuns = details.filter((d) => /^(SEARCH|SCAN) (runs|r|x)\b/.test(d));
      expect(onRuns.length).toBeGreaterThanOrEqual(5);
      for (const d of onRuns) expect(d).toMatch(/USING (COVERING )?INDEX (runs_queued_idx|runs_running_idx|sqlite_autoindex_runs_1)\b/);
      // The only sort is the final pick among one head per applet.
      expect(details.filter((d) => d.includes("TEMP B-TREE"))).toHaveLength(1);
      // The walk from lane to lane seeks the next lane of the same applet, then the next applet.
      // Written as a row value, (applet_id, lane) > (?, ?), SQLite seeks on applet_id alone and
      // filters every queued run of the applet it is on: the claim read the whole backlog.
      expect(details.some((d) => /runs_queued_idx \(applet_id=\? AND lane>\?\)/.test(d))).toBe(true);
    }
  });

  test("a claim after the backlog takes the oldest due run, so the named indexes changed no rule", async () => {
    const { app } = await backlog();
    const run = await app.store.runs.claim("w", app.clock.now());
    expect(run).not.toBeNull();
    // The claim's rule written out as SQL over the seeded backlog, to compare the planned claim with.
    const oldest = sqliteOf(app.store).prepare("SELECT id FROM runs ORDER BY next_attempt_at, created_at LIMIT 1").get() as { id: string };
    expect(run!.id).toBe(oldest.id);
  });
});

describe("no statement of the SQLite store walks every run or every event", () => {
  test("each statement prepared on runs or events (or deleting an applet, which cascades to them) reads through an index on what it filters by (the queue's partial indexes may be walked whole)", () => {
    const sources: string[] = [];
    const prepare = Database.prototype.prepare;
    Database.prototype.prepare = function (this: Database.Database, sql: string) {
      sources.push(sql);
      return prepare.call(this, sql);
    } as typeof prepare;
    let app: TestApp;
    try {
      app = createTestApp();
    } finally {
      Database.prototype.prepare = prepare;
    }
    cleanups.push(() => app.cleanup());
    const db = sqliteOf(app.store);
    const checked: string[] = [];
    const walks: string[] = [];
    for (const sql of new Set(sources)) {
      // Deleting an applet deletes its events and runs too (ON DELETE CASCADE): its plan shows those reads.
      if (!/\b(runs|events)\b|^\s*DELETE FROM applets\b/i.test(sql) || /^\s*(CREATE|PRAGMA|ALTER|DROP|INSERT)\b/i.test(sql)) continue;
      const names = [...new Set([...sql.matchAll(/[@:$](\w+)/g)].map((m) => m[1]!))];
      const params = names.length > 0 ? Object.fromEntries(names.map((n) => [n, null])) : Array((sql.match(/\?/g) ?? []).length).fill(null);
      checked.push(sql);
      for (const d of plan(db, sql, params)) {
        const walk = /^SCAN (runs|events)\b(?: AS \w+)?(?: USING (?:COVERING )?INDEX (\w+))?/.exec(d);
        if (walk && !["runs_queued_idx", "runs_running_idx"].includes(walk[2] ?? "")) walks.push(`${d}  ←  ${sql.replace(/\s+/g, " ").slice(0, 140)}`);
      }
    }
    expect(checked.length).toBeGreaterThan(20);
    expect(walks).toEqual([]);
  });
});
