import { UserError } from "../../core/errors";
import { LEDGER_OUTCOMES, type LedgerEntry, type LedgerOutcome } from "./types";

/**
 * The fire ledger's read, shared by both engines (placeholders are the engine's own: `p(name)`).
 *
 * Why a fire that became a run is not stored twice: a webhook's ingest is one event and one run
 * inserted in one transaction (the hot path `pnpm bench` measures); a ledger row beside them would
 * be a third insert and index update on every webhook. The run already says everything the ledger
 * would (when, which run, skipped by a filter or by the overlap policy, captured while disabled), so
 * the ledger lists it from events and runs with a UNION, and stores only what has no run (missed,
 * dropped, deduplicated, refused, disabled) or what a run alone does not tell (late). A stored row
 * that says a run was late takes the place of that run's own row (a deduplicated row names the
 * earlier run it repeats, which keeps its own row).
 */

/** The outcome a run's own row has, from its status and the reason a skipped run was stored with. */
export const RUN_OUTCOME_SQL = `CASE WHEN r.status <> 'skipped' THEN 'fired'
  WHEN r.error LIKE 'skipped: overlap%' THEN 'skipped_overlap'
  WHEN r.error LIKE 'captured by%' THEN 'disabled'
  WHEN r.error LIKE 'skipped: rate limit%' THEN 'rate_limited'
  ELSE 'filtered' END`;

/** Outcomes a run's own row can have: any other filter reads only the stored rows. */
export const RUN_OUTCOMES: readonly LedgerOutcome[] = ["fired", "skipped_overlap", "disabled", "filtered", "rate_limited"];

export function ledgerListSql(p: (name: "applet" | "outcome" | "beforeAt" | "beforeId" | "limit" | "runs") => string, concat: (a: string, b: string) => string): string {
  const cursor = (at: string, id: string) => `(${p("beforeAt")} IS NULL OR ${at} < ${p("beforeAt")} OR (${at} = ${p("beforeAt")} AND ${id} < ${p("beforeId")}))`;
  const runId = concat("'run:'", "r.id");
  return `SELECT * FROM (
    SELECT * FROM (
      SELECT l.id, l.at, l.outcome, l.detail, l.run_id, r.status AS run_status, l.dedupe_key, l.count
      FROM fire_ledger l LEFT JOIN runs r ON r.id = l.run_id
      WHERE l.applet_id = ${p("applet")} AND (${p("outcome")} IS NULL OR l.outcome = ${p("outcome")}) AND ${cursor("l.at", "l.id")}
      ORDER BY l.at DESC, l.id DESC LIMIT ${p("limit")}
    ) stored
    UNION ALL
    SELECT * FROM (
      SELECT ${runId} AS id, r.created_at AS at, ${RUN_OUTCOME_SQL} AS outcome, COALESCE(r.error, '') AS detail, r.id AS run_id, r.status AS run_status, e.dedupe_key, 1 AS count
      FROM runs r JOIN events e ON e.id = r.event_id
      WHERE ${p("runs")} = 1 AND r.applet_id = ${p("applet")} AND r.planned_run_id IS NULL AND r.created_at = e.received_at
        AND NOT EXISTS (SELECT 1 FROM fire_ledger l2 WHERE l2.run_id = r.id AND l2.outcome = 'late')
        AND (${p("outcome")} IS NULL OR ${RUN_OUTCOME_SQL} = ${p("outcome")}) AND ${cursor("r.created_at", runId)}
      ORDER BY r.created_at DESC, r.id DESC LIMIT ${p("limit")}
    ) own
  ) ledger ORDER BY at DESC, id DESC LIMIT ${p("limit")}`;
}

export interface LedgerRaw {
  id: string;
  at: string;
  outcome: string;
  detail: string;
  run_id: string | null;
  run_status: string | null;
  dedupe_key: string | null;
  count: number | string;
}

export const toLedgerEntry = (r: LedgerRaw): LedgerEntry => ({
  id: r.id,
  at: r.at,
  outcome: (LEDGER_OUTCOMES as readonly string[]).includes(r.outcome) ? (r.outcome as LedgerOutcome) : "fired",
  detail: r.detail,
  runId: r.run_id,
  runStatus: r.run_status,
  dedupeKey: r.dedupe_key,
  count: Number(r.count),
});

/** A page's cursor: the last row's time and id. */
export const encodeLedgerCursor = (e: Pick<LedgerEntry, "at" | "id">): string => Buffer.from(JSON.stringify([e.at, e.id])).toString("base64url");

export function decodeLedgerCursor(cursor: string | null | undefined): { at: string | null; id: string | null } {
  if (!cursor) return { at: null, id: null };
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(v) && typeof v[0] === "string" && typeof v[1] === "string") return { at: v[0], id: v[1] };
  } catch {
    // fall through
  }
  throw new UserError(`ledger: the cursor "${cursor.slice(0, 40)}" is not one this list gave`);
}

/** Detail text is short by design: a sentence, not a payload. */
export const MAX_LEDGER_DETAIL = 300;
export const clipDetail = (text: string): string => (text.length > MAX_LEDGER_DETAIL ? `${text.slice(0, MAX_LEDGER_DETAIL - 1)}…` : text);
