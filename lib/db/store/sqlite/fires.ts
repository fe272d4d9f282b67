import { newId } from "../../../core/ids";
import { clipDetail, decodeLedgerCursor, encodeLedgerCursor, ledgerListSql, RUN_OUTCOMES, toLedgerEntry, type LedgerRaw } from "../ledger-sql";
import type { ActivityRow, LedgerInsert, LedgerOutcome, LedgerPage } from "../types";
import type { Sqlite } from "./client";

/** The fire ledger and expected activity on SQLite (the read is shared with PostgreSQL: ../ledger-sql.ts). */
export function createFiresRepo(sqlite: Sqlite) {
  const insert = sqlite.prepare(
    `INSERT INTO fire_ledger (id, applet_id, at, outcome, detail, run_id, dedupe_key, count, bucket, created_at, updated_at)
     VALUES (@id, @appletId, @at, @outcome, @detail, @runId, @dedupeKey, @count, @bucket, @now, @now)
     ON CONFLICT (applet_id, bucket) WHERE bucket IS NOT NULL DO UPDATE SET count = count + excluded.count, updated_at = excluded.updated_at`,
  );
  const list = sqlite.prepare<Record<string, unknown>, LedgerRaw>(ledgerListSql((name) => `@${name}`, (a, b) => `${a} || ${b}`));
  const totals = sqlite.prepare<[string], { outcome: string; count: number }>("SELECT outcome, SUM(count) AS count FROM fire_ledger WHERE updated_at >= ? GROUP BY outcome");
  const deleteOld = sqlite.prepare<[string, number]>("DELETE FROM fire_ledger WHERE rowid IN (SELECT rowid FROM fire_ledger WHERE updated_at < ? LIMIT ?)");
  const appletExists = sqlite.prepare<[string], { id: string }>("SELECT id FROM applets WHERE id = ?");
  const setExpectation = sqlite.prepare(
    `INSERT INTO applet_activity (applet_id, expect_every_hours, expect_since, created_at, updated_at) VALUES (@appletId, @hours, @now, @now, @now)
     ON CONFLICT (applet_id) DO UPDATE SET expect_every_hours = excluded.expect_every_hours, expect_since = excluded.expect_since, updated_at = excluded.updated_at`,
  );
  const activity = sqlite.prepare<[], { applet_id: string; expect_every_hours: number | null; expect_since: string | null; quiet_since: string | null; quiet_detail: string | null; last_event_at: string | null }>(
    `SELECT a.applet_id, a.expect_every_hours, a.expect_since, a.quiet_since, a.quiet_detail,
       (SELECT MAX(e.received_at) FROM events e WHERE e.applet_id = a.applet_id) AS last_event_at
     FROM applet_activity a WHERE a.expect_every_hours IS NOT NULL OR a.quiet_since IS NOT NULL`,
  );
  const openQuiet = sqlite.prepare(
    `INSERT INTO applet_activity (applet_id, quiet_since, quiet_detail, created_at, updated_at) VALUES (@appletId, @now, @detail, @now, @now)
     ON CONFLICT (applet_id) DO UPDATE SET quiet_since = excluded.quiet_since, quiet_detail = excluded.quiet_detail, updated_at = excluded.updated_at
     WHERE applet_activity.quiet_since IS NULL`,
  );
  const closeQuiet = sqlite.prepare("UPDATE applet_activity SET quiet_since = NULL, quiet_detail = NULL, updated_at = ? WHERE applet_id = ? AND quiet_since IS NOT NULL");
  const write = (r: LedgerInsert & { bucket?: string | null }, now: string) =>
    insert.run({ id: newId(), appletId: r.appletId, at: r.at, outcome: r.outcome, detail: clipDetail(r.detail), runId: r.runId ?? null, dedupeKey: r.dedupeKey ?? null, count: r.count ?? 1, bucket: r.bucket ?? null, now });
  const recordAll = sqlite.transaction((rows: LedgerInsert[], now: string) => {
    for (const r of rows) write(r, now);
  });
  return {
    record: (rows: LedgerInsert[], now: string): void => {
      if (rows.length) recordAll(rows, now);
    },
    count: (row: LedgerInsert & { bucket: string; count: number }, now: string): void => void write(row, now),
    list: (appletId: string, opts: { outcome?: LedgerOutcome; before?: string | null; limit: number }): LedgerPage => {
      const limit = Math.min(Math.max(opts.limit, 1), 200);
      const cursor = decodeLedgerCursor(opts.before);
      const rows = list.all({
        applet: appletId,
        outcome: opts.outcome ?? null,
        beforeAt: cursor.at,
        beforeId: cursor.id,
        limit: limit + 1,
        runs: !opts.outcome || RUN_OUTCOMES.includes(opts.outcome) ? 1 : 0,
      });
      const entries = rows.slice(0, limit).map(toLedgerEntry);
      return { entries, nextCursor: rows.length > limit ? encodeLedgerCursor(entries[entries.length - 1]!) : null };
    },
    totals: (since: string) => totals.all(since).map((r) => ({ outcome: r.outcome, count: Number(r.count) })),
    deleteBefore: (before: string, limit: number): number => deleteOld.run(before, limit).changes,
    setExpectation: (appletId: string, hours: number | null, now: string): boolean => {
      if (!appletExists.get(appletId)) return false;
      setExpectation.run({ appletId, hours, now });
      return true;
    },
    activity: (): ActivityRow[] =>
      activity.all().map((r) => ({
        appletId: r.applet_id,
        expectEveryHours: r.expect_every_hours,
        expectSince: r.expect_since,
        quietSince: r.quiet_since,
        quietDetail: r.quiet_detail,
        lastEventAt: r.last_event_at,
      })),
    openQuiet: (appletId: string, detail: string, now: string): boolean => openQuiet.run({ appletId, detail: clipDetail(detail), now }).changes === 1,
    closeQuiet: (appletId: string, now: string): boolean => closeQuiet.run(now, appletId).changes === 1,
  };
}
