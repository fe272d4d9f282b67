import type { SeedStore } from "../types";
import { query, type Queryable } from "./pool";

export function seedStore(q: Queryable): SeedStore {
  return {
    setRunState: async (runId, s) =>
      (
        await query(
          q,
          `UPDATE runs SET status = $2, attempt = $3, max_attempts = $4, next_attempt_at = $5, locked_by = $6, locked_at = $7, claim_token = $8,
                  started_at = $9, finished_at = $10, error = $11, steps = $12::json, updated_at = $13
           WHERE id = $1`,
          [runId, s.status, s.attempt, s.maxAttempts, s.nextAttemptAt, s.lockedBy, s.lockedAt, s.claimToken, s.startedAt, s.finishedAt, s.error, JSON.stringify(s.steps), s.updatedAt],
        )
      ).rowCount === 1,
    recountApplet: async (appletId) => {
      await query(
        q,
        `UPDATE applets SET
           run_count = (SELECT COUNT(*)::int FROM runs r WHERE r.applet_id = applets.id AND r.status IN ('succeeded', 'failed', 'skipped', 'dead')),
           last_fired_at = (SELECT MAX(r.finished_at) FROM runs r WHERE r.applet_id = applets.id)
         WHERE id = $1`,
        [appletId],
      );
    },
  };
}
