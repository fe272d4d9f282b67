import { newId } from "../../../core/ids";
import type { RunsStore } from "../types";
import type { AlertRecorder } from "./alerts";
import { query, type Begin, type Queryable } from "./pool";
import { runsIngest } from "./runs-ingest";
import { runsRead } from "./runs-read";
import { runsSettle } from "./runs-settle";

/**
 * The runs aggregate on PostgreSQL, by job: events in (runs-ingest.ts), the queue's claim and
 * settles (runs-settle.ts), reads (runs-read.ts), and here an operator's retry and replay.
 */
export function runsStore(q: Queryable, begin: Begin, alerts: AlertRecorder): RunsStore {
  return {
    ...runsIngest(q, begin),
    ...runsSettle(q, begin, alerts),
    ...runsRead(q),
    retry: async (id, now, opts = {}) =>
      (
        await query(
          q,
          `UPDATE runs SET status = 'queued', attempt = attempt + 1, max_attempts = GREATEST(max_attempts, attempt + 1),
                  next_attempt_at = COALESCE($3::text, $2), steps = COALESCE($4::json, steps), finished_at = NULL, updated_at = $2
           WHERE id = $1 AND status IN ('failed', 'dead') AND ($5::int IS NULL OR attempt = $5::int)`,
          [id, now.toISOString(), opts.at?.toISOString() ?? null, opts.steps ? JSON.stringify(opts.steps) : null, opts.attempt ?? null],
        )
      ).rowCount === 1,

    replay: async (id, now, opts = {}) => {
      const runId = newId();
      const r = await query(
        q,
        `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at, lane)
         SELECT $1, applet_id, event_id, 'queued', 1, max_attempts, $2, '[]', $2, $2, COALESCE($4::text, lane) FROM runs WHERE id = $3`,
        [runId, now.toISOString(), id, opts.lane ?? null],
      );
      // A timed run's replay runs its one action again (with its own idempotency key, lib/executor).
      if (r.rowCount === 1) await query(q, "UPDATE runs SET planned_run_id = o.planned_run_id, action_index = o.action_index FROM runs o WHERE runs.id = $1 AND o.id = $2", [runId, id]);
      return r.rowCount === 1 ? runId : null;
    },
  };
}
