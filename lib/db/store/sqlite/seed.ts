import type { Sqlite } from "./client";
import type { SeedRunState } from "../types";

/**
 * Writes only scripts/seed.ts needs: demo runs in every state without running the executor, and
 * the applet counters the executor would have kept. Kept apart from the runs repo so the queue's
 * fenced settle statements stay the only way production code changes a run.
 */
export function createSeedRepo(sqlite: Sqlite) {
  const setRun = sqlite.prepare(
    `UPDATE runs SET status = @status, attempt = @attempt, max_attempts = @maxAttempts, next_attempt_at = @nextAttemptAt,
            locked_by = @lockedBy, locked_at = @lockedAt, claim_token = @claimToken, started_at = @startedAt,
            finished_at = @finishedAt, error = @error, steps = @steps, updated_at = @updatedAt
     WHERE id = @id`,
  );
  // What runs.finish keeps up run by run, recomputed at once from the finished runs.
  const recount = sqlite.prepare(
    `UPDATE applets SET
       run_count = (SELECT COUNT(*) FROM runs r WHERE r.applet_id = applets.id AND r.status IN ('succeeded', 'failed', 'skipped', 'dead')),
       last_fired_at = (SELECT MAX(r.finished_at) FROM runs r WHERE r.applet_id = applets.id)
     WHERE id = ?`,
  );
  return {
    setRunState: (runId: string, s: SeedRunState): boolean =>
      setRun.run({ id: runId, ...s, steps: JSON.stringify(s.steps) }).changes === 1,
    recountApplet: (appletId: string): void => void recount.run(appletId),
  };
}
