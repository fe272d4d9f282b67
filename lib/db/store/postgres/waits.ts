import type { Step } from "../types/runs";
import type { StoredWait, WaitsStore } from "../types";
import { outputText, toWait, WAIT_COLUMNS, type WaitRaw } from "../wait-row";
import { query, type Begin, type Queryable } from "./pool";

const PARK = `UPDATE runs SET status = 'waiting', steps = $1::json, error = $5, locked_by = NULL, locked_at = NULL, claim_token = NULL, next_attempt_at = NULL, holds_lane = $6, updated_at = $2
  WHERE id = $3 AND claim_token = $4 AND status = 'running'`;
const INSERT = `INSERT INTO run_waits (run_id, seq, applet_id, step_id, kind, resume_at, resume_as, timeout_at, detail, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) ON CONFLICT (run_id, seq) DO NOTHING`;
// FOR UPDATE: a resolve that committed meanwhile is seen (READ COMMITTED reads the row's newest version).
const LOCKED = `SELECT resolution FROM run_waits WHERE run_id = $1 AND seq = $2 FOR UPDATE`;
const ONE = `SELECT ${WAIT_COLUMNS} FROM run_waits w JOIN runs r ON r.id = w.run_id WHERE w.run_id = $1 AND w.seq = $2`;
const PENDING = `SELECT ${WAIT_COLUMNS} FROM run_waits w JOIN runs r ON r.id = w.run_id WHERE w.run_id = $1 AND w.resolution IS NULL AND r.status = 'waiting' ORDER BY w.seq DESC LIMIT 1`;
const SETTLE = `UPDATE run_waits SET resolution = $3, resolved_at = $4, resolved_by = $5, output = $6, updated_at = $4
  WHERE run_id = $1 AND seq = $2 AND resolution IS NULL`;
const EARLY = `INSERT INTO run_waits (run_id, seq, applet_id, step_id, kind, resolution, resolved_at, resolved_by, output, created_at, updated_at)
  SELECT $1, $2, $7, '', $8, $3, $4, $5, $6, $4, $4 FROM runs WHERE id = $1 AND status IN ('queued', 'running')
  ON CONFLICT (run_id, seq) DO NOTHING`;
// A run that held its lane while it waited (strict order) is queued as its lane's head: due since
// it was created, before every later run of the lane, which strict order kept queued behind it.
const AS_QUEUED = (now: string) => `status = 'queued', error = NULL, next_attempt_at = CASE WHEN runs.holds_lane = 1 THEN runs.created_at ELSE ${now} END, holds_lane = 0, updated_at = ${now}`;
const REQUEUE = `UPDATE runs SET ${AS_QUEUED("$2")} WHERE id = $1 AND status = 'waiting'`;
// The tick: the due waits, each resolved once (SKIP LOCKED: concurrent ticks take disjoint rows),
// and their runs queued, in one statement. It reads only due rows through run_waits_due_idx, and
// reaches the rows it settles and the runs it queues by their addresses: the locked rows' ctids
// (a TID scan) and the runs' ids (runs_pkey), as arrays. As a join (FROM due) the generic plan that
// PostgreSQL adopts for this prepared statement after a few ticks with waits due hashed the due
// rows against a sequential scan of every unresolved wait: a tick's cost grew with the runs waiting.
export const RESUME_DUE = `WITH due AS (
    SELECT ctid AS row FROM run_waits WHERE resolution IS NULL AND resume_at IS NOT NULL AND resume_at <= $1
    ORDER BY resume_at LIMIT $2 FOR UPDATE SKIP LOCKED
  ), settled AS (
    UPDATE run_waits SET resolution = COALESCE(resume_as, 'time'), resolved_at = $1, resolved_by = 'clock', updated_at = $1
    WHERE ctid = ANY (ARRAY(SELECT row FROM due)) AND resolution IS NULL RETURNING run_id
  )
  UPDATE runs SET ${AS_QUEUED("$1")}
  WHERE id = ANY (ARRAY(SELECT run_id FROM settled)) AND status = 'waiting' RETURNING id`;
const CANCEL_RUN = `UPDATE runs SET status = 'cancelled', error = $2, finished_at = $3, holds_lane = 0, updated_at = $3 WHERE id = $1 AND status = 'waiting'`;
const CANCEL_WAITS = `UPDATE run_waits SET resolution = 'cancelled', resolved_at = $3, resolved_by = $2, updated_at = $3 WHERE run_id = $1 AND resolution IS NULL`;
const WAITING = `SELECT ${WAIT_COLUMNS} FROM run_waits w JOIN runs r ON r.id = w.run_id
  WHERE ($1::text IS NULL OR w.applet_id = $1) AND w.resolution IS NULL AND r.status = 'waiting'
  ORDER BY w.resume_at IS NULL, w.resume_at, w.run_id LIMIT $2`;
const COUNTS = `SELECT w.kind, COUNT(*) AS n FROM run_waits w JOIN runs r ON r.id = w.run_id WHERE w.resolution IS NULL AND r.status = 'waiting' GROUP BY w.kind`;

/** Waiting runs on PostgreSQL: the statements of ../sqlite/waits.ts in this dialect. */
export function waitsStore(q: Queryable, begin: Begin): WaitsStore {
  const get = async (c: Queryable, runId: string, seq: number): Promise<StoredWait | null> => {
    const row = (await query<WaitRaw & Record<string, unknown>>(c, ONE, [runId, seq])).rows[0];
    return row ? toWait(row) : null;
  };
  return {
    suspend: (run, steps: Step[], w, now) =>
      begin(async (c) => {
        const at = now.toISOString();
        if ((await query(c, PARK, [JSON.stringify(steps), at, run.id, run.claimToken, w.summary, w.holdsLane ? 1 : 0])).rowCount !== 1) return "lost";
        await query(c, INSERT, [run.id, w.seq, run.appletId, w.stepId, w.kind, w.resumeAt?.toISOString() ?? null, w.resumeAs, w.timeoutAt?.toISOString() ?? null, JSON.stringify(w.detail), at]);
        const row = (await query<{ resolution: string | null }>(c, LOCKED, [run.id, w.seq])).rows[0];
        if (!row || row.resolution === null) return "waiting";
        await query(c, REQUEUE, [run.id, at]);
        return "queued";
      }),
    get: (runId, seq) => get(q, runId, seq),
    pendingOf: async (runId) => {
      const row = (await query<WaitRaw & Record<string, unknown>>(q, PENDING, [runId])).rows[0];
      return row ? toWait(row) : null;
    },
    resolve: (r) =>
      begin(async (c) => {
        const at = r.now.toISOString();
        const params = [r.runId, r.seq, r.resolution, at, r.by, outputText(r.output)];
        const settle = async () => {
          if ((await query(c, SETTLE, params)).rowCount !== 1) return false;
          await query(c, REQUEUE, [r.runId, at]);
          return true;
        };
        if (await settle()) return { resolved: true as const };
        if (r.early) {
          if ((await query(c, EARLY, [...params, r.early.appletId, r.early.kind])).rowCount === 1) return { resolved: true as const };
          // The run was parking: its wait's row, not yet committed, was what the early row ran into,
          // and this waited for it. Committed now, it is the wait to settle (each statement reads
          // what is committed when it starts), when it waits for what the call is (a call for a call).
          // Refused, the call would be lost and the run would wait on for it.
          const parked = await get(c, r.runId, r.seq);
          if (parked && parked.resolution === null && parked.kind === r.early.kind && (await settle())) return { resolved: true as const };
        }
        return { resolved: false as const, wait: await get(c, r.runId, r.seq) };
      }),
    resumeDue: async (now, limit) => (await query(q, RESUME_DUE, [now.toISOString(), limit])).rowCount ?? 0,
    cancel: (runId, by, reason, now) =>
      begin(async (c) => {
        const at = now.toISOString();
        if ((await query(c, CANCEL_RUN, [runId, reason, at])).rowCount !== 1) return false;
        await query(c, CANCEL_WAITS, [runId, by, at]);
        return true;
      }),
    listWaiting: async (opts) => (await query<WaitRaw & Record<string, unknown>>(q, WAITING, [opts.appletId ?? null, opts.limit])).rows.map(toWait),
    countWaiting: async () => Object.fromEntries((await query<{ kind: string; n: string }>(q, COUNTS)).rows.map((r) => [r.kind, Number(r.n)])),
  };
}
