import { newId } from "../../../core/ids";
import { clipDetail, decodeLedgerCursor, encodeLedgerCursor, ledgerListSql, RUN_OUTCOMES, toLedgerEntry, type LedgerRaw } from "../ledger-sql";
import type { FiresStore, LedgerInsert } from "../types";
import { query, type Queryable } from "./pool";

const PARAMS = { applet: "$1::text", outcome: "$2::text", beforeAt: "$3::text", beforeId: "$4::text", limit: "$5::int", runs: "$6::int" } as const;
const LIST = ledgerListSql((name) => PARAMS[name], (a, b) => `${a} || ${b}`);

const INSERT = `INSERT INTO fire_ledger (id, applet_id, at, outcome, detail, run_id, dedupe_key, count, bucket, created_at, updated_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[]) AS r(id, applet_id, at, outcome, detail, run_id, dedupe_key, count, bucket)
  CROSS JOIN (SELECT $10::text AS created_at, $10::text AS updated_at) t
  ON CONFLICT (applet_id, bucket) WHERE bucket IS NOT NULL DO UPDATE SET count = fire_ledger.count + excluded.count, updated_at = excluded.updated_at`;

/** The fire ledger and expected activity on PostgreSQL: the statements of ../sqlite/fires.ts in this dialect. */
export function firesStore(q: Queryable): FiresStore {
  const write = async (rows: (LedgerInsert & { bucket?: string | null })[], now: string) => {
    if (!rows.length) return;
    await query(q, INSERT, [
      rows.map(() => newId()),
      rows.map((r) => r.appletId),
      rows.map((r) => r.at),
      rows.map((r) => r.outcome),
      rows.map((r) => clipDetail(r.detail)),
      rows.map((r) => r.runId ?? null),
      rows.map((r) => r.dedupeKey ?? null),
      rows.map((r) => r.count ?? 1),
      rows.map((r) => r.bucket ?? null),
      now,
    ]);
  };
  return {
    record: (rows, now) => write(rows, now),
    count: (row, now) => write([row], now),
    list: async (appletId, opts) => {
      const limit = Math.min(Math.max(opts.limit, 1), 200);
      const cursor = decodeLedgerCursor(opts.before);
      const runs = !opts.outcome || RUN_OUTCOMES.includes(opts.outcome) ? 1 : 0;
      const rows = (await query<LedgerRaw>(q, LIST, [appletId, opts.outcome ?? null, cursor.at, cursor.id, limit + 1, runs])).rows;
      const entries = rows.slice(0, limit).map(toLedgerEntry);
      return { entries, nextCursor: rows.length > limit ? encodeLedgerCursor(entries[entries.length - 1]!) : null };
    },
    totals: async (since) =>
      (await query<{ outcome: string; count: string }>(q, "SELECT outcome, SUM(count) AS count FROM fire_ledger WHERE updated_at >= $1 GROUP BY outcome", [since])).rows.map((r) => ({
        outcome: r.outcome,
        count: Number(r.count),
      })),
    deleteBefore: async (before, limit) =>
      (await query(q, "DELETE FROM fire_ledger WHERE id IN (SELECT id FROM fire_ledger WHERE updated_at < $1 LIMIT $2)", [before, limit])).rowCount ?? 0,
    setExpectation: async (appletId, hours, now) =>
      ((
        await query(
          q,
          `INSERT INTO applet_activity (applet_id, expect_every_hours, expect_since, created_at, updated_at)
           SELECT id, $2::double precision, $3, $3, $3 FROM applets WHERE id = $1
           ON CONFLICT (applet_id) DO UPDATE SET expect_every_hours = excluded.expect_every_hours, expect_since = excluded.expect_since, updated_at = excluded.updated_at`,
          [appletId, hours, now],
        )
      ).rowCount ?? 0) === 1,
    activity: async () =>
      (
        await query<{ applet_id: string; expect_every_hours: number | null; expect_since: string | null; quiet_since: string | null; quiet_detail: string | null; last_event_at: string | null }>(
          q,
          `SELECT a.applet_id, a.expect_every_hours, a.expect_since, a.quiet_since, a.quiet_detail,
             (SELECT MAX(e.received_at) FROM events e WHERE e.applet_id = a.applet_id) AS last_event_at
           FROM applet_activity a WHERE a.expect_every_hours IS NOT NULL OR a.quiet_since IS NOT NULL`,
        )
      ).rows.map((r) => ({
        appletId: r.applet_id,
        expectEveryHours: r.expect_every_hours === null ? null : Number(r.expect_every_hours),
        expectSince: r.expect_since,
        quietSince: r.quiet_since,
        quietDetail: r.quiet_detail,
        lastEventAt: r.last_event_at,
      })),
    openQuiet: async (appletId, detail, now) =>
      ((
        await query(
          q,
          `INSERT INTO applet_activity (applet_id, quiet_since, quiet_detail, created_at, updated_at) VALUES ($1, $2, $3, $2, $2)
           ON CONFLICT (applet_id) DO UPDATE SET quiet_since = excluded.quiet_since, quiet_detail = excluded.quiet_detail, updated_at = excluded.updated_at
           WHERE applet_activity.quiet_since IS NULL`,
          [appletId, now, clipDetail(detail)],
        )
      ).rowCount ?? 0) === 1,
    closeQuiet: async (appletId, now) =>
      ((await query(q, "UPDATE applet_activity SET quiet_since = NULL, quiet_detail = NULL, updated_at = $1 WHERE applet_id = $2 AND quiet_since IS NOT NULL", [now, appletId])).rowCount ?? 0) === 1,
  };
}
