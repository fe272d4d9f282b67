import { newId } from "../../../core/ids";
import type { AlertsRepo } from "./alerts";
import type { Sqlite } from "./client";
import { createPlannedRunsRepo } from "./planned-runs";
import type { runs } from "./schema";
import type { Ingested, IngestInput, PlanWrite, RetryOptions } from "../types";
import type { RawRow } from "./rows";
import { createRunsIngest } from "./runs-ingest";
import { createRunsRead } from "./runs-read";
import { createRunsSettle } from "./runs-settle";

type RunRowRaw = RawRow<typeof runs>;

/** The claim's statement, for tests that read its plan (tests/integration/sqlite-plans.test.ts). */
export { CLAIM_SQL } from "./runs-settle";

/**
 * Events and runs: the queue lives here. Every trigger ends in `ingest`, one transaction inserting
 * the event (deduped on applet + dedupe key) and its queued run. Every settle is fenced by the
 * claim token, so a worker whose lease was taken over changes nothing.
 *
 * By job: events in (runs-ingest.ts), the queue's claim and settles (runs-settle.ts), reads
 * (runs-read.ts), and here an operator's retry and replay.
 */
export function createRunsRepo(
  sqlite: Sqlite,
  alerts: AlertsRepo,
  applyPlan: (plan: PlanWrite) => unknown = createPlannedRunsRepo(sqlite).applyPlan,
  /** The ingest of an event whose applet has controls over runs (./run-controls.ts). */
  ingestControlled?: (i: IngestInput) => Ingested,
) {
  const byId = sqlite.prepare<[string], RunRowRaw>("SELECT * FROM runs WHERE id = ?");
  const replayTimed = sqlite.prepare("UPDATE runs SET planned_run_id = ?, action_index = ? WHERE id = ?");
  // A replay's lane is set by its insert (a claim in between must not see it in the default lane): the one given, or the original run's.
  const insertReplay = sqlite.prepare(
    `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at, lane)
     VALUES (@id, @applet, @event, 'queued', 1, @maxAttempts, @at, '[]', @at, @at, COALESCE(@lane, (SELECT o.lane FROM runs o WHERE o.id = @original)))`,
  );
  const manualRetry = sqlite.prepare(
    `UPDATE runs SET status = 'queued', attempt = attempt + 1, max_attempts = MAX(max_attempts, attempt + 1),
            next_attempt_at = COALESCE(@at, @now), steps = COALESCE(@steps, steps), finished_at = NULL, updated_at = @now
     WHERE id = @id AND status IN ('failed', 'dead') AND (@attempt IS NULL OR attempt = @attempt)`,
  );

  return {
    ...createRunsIngest(sqlite, applyPlan, ingestControlled),
    ...createRunsSettle(sqlite, alerts),
    ...createRunsRead(sqlite),

    /** The Retry button: the same run, attempt + 1, queued now. */
    retry: (id: string, now: Date, opts: RetryOptions = {}): boolean =>
      manualRetry.run({ id, now: now.toISOString(), at: opts.at?.toISOString() ?? null, steps: opts.steps ? JSON.stringify(opts.steps) : null, attempt: opts.attempt ?? null }).changes === 1,

    /** The Replay button: a fresh run (attempt 1, no steps) from the same event. */
    replay: (id: string, now: Date, opts: { lane?: string } = {}): string | null => {
      const r = byId.get(id);
      if (!r) return null;
      const runId = newId();
      insertReplay.run({ id: runId, applet: r.applet_id, event: r.event_id, maxAttempts: r.max_attempts, at: now.toISOString(), lane: opts.lane ?? null, original: id });
      // A timed run's replay runs its one action again (with its own idempotency key, lib/executor).
      if (r.action_index !== null) replayTimed.run(r.planned_run_id, r.action_index, runId);
      return runId;
    },
  };
}
