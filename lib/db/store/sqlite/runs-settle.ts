import { toClaimed, toRun, type ClaimedAppletRaw } from "../run-row";
import { randomUUID } from "node:crypto";
import type { AlertsRepo } from "./alerts";
import type { Sqlite } from "./client";
import type { RunStatus, Step } from "../types/runs";
import type { runs } from "./schema";
import type { ClaimedRun, FinalStatus, RecoveredRun, RecoverStaleOptions, Run } from "../types";
import type { RawRow } from "./rows";

type StaleRow = { id: string; applet_id: string; claim_token: string | null; locked_by: string | null; reason: RecoveredRun["reason"] };

type RunRowRaw = RawRow<typeof runs>;

/**
 * The claim: the oldest due queued run among lanes with nothing running. A lane is an applet's
 * (applet_id, lane): every run is in its applet's lane '' unless the applet's controls over runs
 * spread them (lib/queue/controls.ts), so by default this is "one running run per applet, in
 * order". Lanes with queued runs are enumerated one index seek at a time (a loose index scan of
 * runs_queued_idx), so a backlog of 100,000 runs for one busy applet costs a claim a few seeks,
 * not a scan of the backlog. Each step seeks the applet's next lane (applet_id = ? AND lane > ?),
 * else the next applet (applet_id > ?) and its first lane: written as a row value,
 * (applet_id, lane) > (?, ?), SQLite seeks on applet_id alone and then filters every queued run
 * of the applet it is on, which made each claim read the backlog (a finish-and-claim 183 → 617 µs
 * at 5,000 queued, and webhook ingest behind it at a quarter of its baseline).
 *
 * The seeks name their index (INDEXED BY): SQLite's planner, without statistics, preferred
 * runs_status_created_idx (status, created_at) once it existed, which turned every step of the
 * scan into a read and a sort of every queued run (a claim of 4 ms at 2,000 queued, seconds under
 * a webhook backlog, all of it inside the finish-and-claim write transaction the ingress waits on).
 * INDEXED BY makes a plan that cannot use the index an error at prepare time, not a slow claim.
 *
 * A lane is taken by a running run, or by a run waiting at a wait step of an applet with strict
 * order (controls.order; holds_lane): the probe is written as runs_running_idx's predicate
 * (drizzle/0020), so it is the one seek it was before, and an applet without the option, whose
 * waiting runs are not in that index, pays nothing for it.
 */
/** The next lane with queued runs in the same applet as q (a seek on applet_id = ? AND lane > ?). */
const NEXT_LANE = `(SELECT lane FROM runs INDEXED BY runs_queued_idx WHERE status = 'queued' AND applet_id = q.applet_id AND lane > q.lane ORDER BY lane LIMIT 1)`;
/** The next applet with queued runs after q's (a seek on applet_id > ?). */
const NEXT_APPLET = `(SELECT applet_id FROM runs INDEXED BY runs_queued_idx WHERE status = 'queued' AND applet_id > q.applet_id ORDER BY applet_id LIMIT 1)`;
export const CLAIM_SQL = `WITH RECURSIVE queued_lanes(applet_id, lane) AS (
       SELECT (SELECT applet_id FROM runs INDEXED BY runs_queued_idx WHERE status = 'queued' ORDER BY applet_id, lane LIMIT 1),
              (SELECT lane FROM runs INDEXED BY runs_queued_idx WHERE status = 'queued' ORDER BY applet_id, lane LIMIT 1)
       UNION ALL
       SELECT CASE WHEN ${NEXT_LANE} IS NOT NULL THEN q.applet_id ELSE ${NEXT_APPLET} END,
              COALESCE(${NEXT_LANE}, (SELECT lane FROM runs INDEXED BY runs_queued_idx WHERE status = 'queued' AND applet_id = ${NEXT_APPLET} ORDER BY lane LIMIT 1))
       FROM queued_lanes q WHERE q.applet_id IS NOT NULL
     ),
     candidates(id, next_attempt_at, created_at) AS (
       SELECT r.id, r.next_attempt_at, r.created_at
       FROM queued_lanes q
       JOIN runs r ON q.applet_id IS NOT NULL AND r.id = (
         SELECT id FROM runs INDEXED BY runs_queued_idx WHERE status = 'queued' AND applet_id = q.applet_id AND lane = q.lane AND next_attempt_at <= @now
         ORDER BY next_attempt_at LIMIT 1)
       WHERE NOT EXISTS (SELECT 1 FROM runs x INDEXED BY runs_running_idx
                         WHERE (x.status = 'running' OR (x.status = 'waiting' AND x.holds_lane = 1)) AND x.applet_id = q.applet_id AND x.lane = q.lane)
     )
     UPDATE runs SET status = 'running', locked_by = @worker, locked_at = @now, claim_token = @token,
            started_at = MAX(@now, COALESCE((SELECT ap.last_fired_at FROM applets ap WHERE ap.id = runs.applet_id), @now)), finished_at = NULL, updated_at = @now,
            applet_version = (SELECT MAX(v.version) FROM applet_versions v WHERE v.applet_id = runs.applet_id)
     WHERE id = (SELECT id FROM candidates ORDER BY next_attempt_at, created_at LIMIT 1) AND status = 'queued'
     RETURNING *`;

/**
 * Runs nobody will settle, back to the queue (RunsStore#recoverStale). The look is a plain read
 * (almost always empty, and it runs every few seconds); only found runs take the write lock.
 */
function createRecoverStale(sqlite: Sqlite) {
  // Running runs nobody will settle: their worker's lease has expired (or it never had a row, as in
  // a database restored from a backup), or they have been locked past the stuck bound (a live
  // worker hung on them). The caller's own runs are judged by the stuck bound only: it knows they
  // are in flight even when its own lease lapsed while the disk was full.
  // Those of workers seen gone (lib/queue/liveness.ts) go whatever their lease says, and the
  // caller's own that none of its slots holds, locked before @orphanBefore (a claim whose answer
  // was lost), go too.
  const stale = sqlite.prepare<
    { now: string; stuckBefore: string; self: string | null; gone: string; orphanBefore: string | null; holding: string },
    StaleRow
  >(
    `SELECT r.id, r.applet_id, r.claim_token, r.locked_by,
       CASE WHEN r.locked_at IS NULL OR r.locked_at < @stuckBefore THEN 'stuck'
            WHEN r.locked_by IN (SELECT value FROM json_each(@gone)) THEN 'gone'
            WHEN r.locked_by IS @self THEN 'orphan'
            ELSE 'lease' END AS reason
     FROM runs r LEFT JOIN workers w ON w.id = r.locked_by
     WHERE r.status = 'running'
       AND (r.locked_at IS NULL OR r.locked_at < @stuckBefore
            OR r.locked_by IN (SELECT value FROM json_each(@gone))
            OR (r.locked_by IS NOT @self AND (w.id IS NULL OR w.lease_until <= @now))
            OR (r.locked_by = @self AND r.locked_at < @orphanBefore AND r.id NOT IN (SELECT value FROM json_each(@holding))))`,
  );
  // Back to queued with the same attempt and the same next_attempt_at: the claim orders by it, so
  // a recovered run keeps its place ahead of the runs queued after it (oldest first). Fenced by the
  // token seen, so a run settled in between is left alone.
  const recover = sqlite.prepare(
    `UPDATE runs SET status = 'queued', locked_by = NULL, locked_at = NULL, claim_token = NULL,
            next_attempt_at = COALESCE(next_attempt_at, created_at), updated_at = @now
     WHERE id = @id AND status = 'running' AND claim_token IS @token`,
  );
  const recoverStale = (o: RecoverStaleOptions): RecoveredRun[] => {
    const now = o.now.toISOString();
    const found = stale.all({
      now,
      stuckBefore: o.stuckBefore.toISOString(),
      self: o.self ?? null,
      gone: JSON.stringify(o.gone ?? []),
      orphanBefore: o.holding ? o.holding.lockedBefore.toISOString() : null,
      holding: JSON.stringify(o.holding?.ids ?? []),
    });
    if (found.length === 0) return [];
    return recoverTx.immediate(found, now);
  };
  const recoverTx = sqlite.transaction((found: StaleRow[], now: string) =>
    found
      .filter((r) => recover.run({ id: r.id, token: r.claim_token, now }).changes === 1)
      .map((r): RecoveredRun => ({ id: r.id, appletId: r.applet_id, lockedBy: r.locked_by, reason: r.reason })),
  );
  return recoverStale;
}

/**
 * One claim, with the reads of its event and applet (the caller's transaction holds them
 * together): the run as the executor gets it, or null when nothing is due.
 */
function createClaimOne(sqlite: Sqlite) {
  const claim = sqlite.prepare<{ worker: string; now: string; token: string }, RunRowRaw>(CLAIM_SQL);
  const eventOf = sqlite.prepare<[string], { id: string; applet_id: string; source: string; dedupe_key: string | null; payload: string; received_at: string }>(
    "SELECT id, applet_id, source, dedupe_key, payload, received_at FROM events WHERE id = ?",
  );
  const appletOf = sqlite.prepare<[string], ClaimedAppletRaw>("SELECT id, name, definition, updated_at FROM applets WHERE id = ?");
  const earlierRunOfEvent = sqlite.prepare<{ eventId: string; createdAt: string; id: string }, { one: number }>(
    `SELECT 1 AS one FROM runs WHERE event_id = @eventId AND id <> @id
       AND (created_at < @createdAt OR (created_at = @createdAt AND id < @id)) LIMIT 1`,
  );
  /**
   * Whether a claimed run is a replay: a later run of an event that already had one. The run an
   * event was ingested with is created in the same transaction with created_at = the event's
   * received_at; a replay is created later. Same-millisecond replays (and rows whose original run
   * retention has not yet reached) are told apart by an earlier run of the same event.
   */
  const isReplay = (run: Run, eventReceivedAt: string | null): boolean =>
    run.createdAt !== eventReceivedAt || earlierRunOfEvent.get({ eventId: run.eventId, createdAt: run.createdAt, id: run.id }) !== undefined;
  const claimOne = (workerId: string, now: Date): ClaimedRun | null => {
    const token = randomUUID();
    // `.all()`, never `.get()`: `.get()` returns the RETURNING row before the statement has run
    // to its end and ignores the reset's error. When the claim was its own transaction, on a full
    // disk that handed out a claim that was never committed, so the run ran again and again.
    const [row] = claim.all({ worker: workerId, now: now.toISOString(), token });
    if (!row) return null;
    const run = toRun(row);
    const event = eventOf.get(run.eventId) ?? null;
    return toClaimed(run, token, { event, applet: appletOf.get(run.appletId) ?? null, replay: isReplay(run, event?.received_at ?? null) });
  };
  return claimOne;
}

/** The queue's writes of a claimed run: claim, progress, settle, requeue, release, recovery. */
export function createRunsSettle(sqlite: Sqlite, alerts: AlertsRepo) {
  const saveSteps = sqlite.prepare(
    "UPDATE runs SET steps = ?, updated_at = ? WHERE id = ? AND claim_token = ? AND status = 'running'",
  );
  // A null @steps keeps the stored steps (a run whose steps could not be read is failed as it is).
  const finish = sqlite.prepare(
    `UPDATE runs SET status = @status, steps = COALESCE(@steps, steps), error = @error, finished_at = @now, updated_at = @now,
            locked_by = NULL, locked_at = NULL, claim_token = NULL, next_attempt_at = NULL
     WHERE id = @id AND claim_token = @token AND status = 'running'`,
  );
  // The failure streak moves in the same statement (failed/dead + 1, succeeded 0), and
  // alert_open says whether a success owes a recovery notice, so a healthy run costs nothing more.
  const bumpApplet = sqlite.prepare<{ now: string; status: string; id: string }, { alert_open: number }>(
    // last_fired_at only moves forward: a claim's started_at is never before it, and with several
    // lanes of one applet a finish stamped earlier may commit later.
    `UPDATE applets SET run_count = run_count + 1, last_fired_at = MAX(COALESCE(last_fired_at, @now), @now),
       failure_streak = CASE WHEN @status IN ('failed', 'dead') THEN failure_streak + 1 WHEN @status = 'succeeded' THEN 0 ELSE failure_streak END
     WHERE id = @id RETURNING alert_open`,
  );
  const requeue = sqlite.prepare(
    `UPDATE runs SET status = 'queued', attempt = attempt + 1, next_attempt_at = @next, steps = @steps, error = @error,
            updated_at = @now, locked_by = NULL, locked_at = NULL, claim_token = NULL
     WHERE id = @id AND claim_token = @token AND status = 'running'`,
  );
  const release = sqlite.prepare(
    `UPDATE runs SET status = 'queued', locked_by = NULL, locked_at = NULL, claim_token = NULL, started_at = NULL, updated_at = @now
     WHERE id = @id AND claim_token = @token AND status = 'running'`,
  );
  const recoverStale = createRecoverStale(sqlite);
  const claimOne = createClaimOne(sqlite);

  const finishTx = sqlite.transaction(
    (id: string, token: string, status: RunStatus, steps: Step[] | null, error: string | null, now: string, appletId: string, attempt: number): boolean => {
      const ok = finish.run({ id, token, status, steps: steps === null ? null : JSON.stringify(steps), error, now }).changes === 1;
      if (ok) {
        const [bumped] = bumpApplet.all({ now, status, id: appletId });
        if (bumped && alerts.settleNeedsAlertState(status, bumped.alert_open === 1)) alerts.recordSettled(appletId, { id, status, error, attempt }, now);
      }
      return ok;
    },
  );

  // The alert on a first failed attempt (when Settings ask for it) is recorded with the requeue.
  const retryTx = sqlite.transaction((run: ClaimedRun, steps: Step[], error: string, next: string, now: string): boolean => {
    const ok = requeue.run({ id: run.id, token: run.claimToken, next, steps: JSON.stringify(steps), error, now }).changes === 1;
    if (ok && run.attempt === 1) alerts.recordRetrying(run.appletId, { id: run.id, error, attempt: run.attempt, maxAttempts: run.maxAttempts, nextAttemptAt: next }, now);
    return ok;
  });

  // The claim and the reads of its event and applet in one transaction: a read that fails takes the claim
  // back with it (as the single statement does on PostgreSQL), instead of leaving the run running.
  const claimTx = sqlite.transaction(claimOne);
  const finishAndClaimTx = sqlite.transaction(
    (run: ClaimedRun, status: FinalStatus, steps: Step[] | null, error: string | null, now: Date, workerId: string) => {
      const ok = finishTx(run.id, run.claimToken, status, steps, error, now.toISOString(), run.appletId, run.attempt);
      return { ok, next: claimOne(workerId, now) };
    },
  );

  return {
    /** Claims the oldest due queued run whose applet has no run in flight; null when idle. */
    claim: (workerId: string, now: Date): ClaimedRun | null => claimTx(workerId, now),

    /** Records progress mid-run; false when the claim was lost. */
    saveSteps: (run: ClaimedRun, steps: Step[], now: Date): boolean =>
      saveSteps.run(JSON.stringify(steps), now.toISOString(), run.id, run.claimToken).changes === 1,

    /** Ends the run (succeeded, skipped, failed, dead) and counts it on the applet; `steps` null keeps the stored ones. */
    finish: (run: ClaimedRun, status: FinalStatus, steps: Step[] | null, error: string | null, now: Date): boolean =>
      finishTx(run.id, run.claimToken, status, steps, error, now.toISOString(), run.appletId, run.attempt),

    /**
     * Ends a run and claims the next one in the same transaction: one commit per run instead of
     * two, so a busy worker takes the write lock half as often (and the web process, which shares
     * it for webhook inserts, waits on it less).
     */
    finishAndClaim: (
      run: ClaimedRun,
      status: FinalStatus,
      steps: Step[] | null,
      error: string | null,
      now: Date,
      workerId: string,
    ): { ok: boolean; next: ClaimedRun | null } => finishAndClaimTx(run, status, steps, error, now, workerId),

    /** Puts the run back in the queue for its next attempt. */
    retryLater: (run: ClaimedRun, steps: Step[], error: string, nextAttemptAt: Date, now: Date): boolean =>
      retryTx(run, steps, error, nextAttemptAt.toISOString(), now.toISOString()),

    /** Hands a claimed run back to the queue with the same attempt (a worker stopping, or one that could not start it). */
    release: (run: ClaimedRun, now: Date): boolean =>
      release.run({ id: run.id, token: run.claimToken, now: now.toISOString() }).changes === 1,

    /**
     * Runs whose worker died go back to queued with the same attempt (spec Worker 6): those of a
     * worker whose lease expired, and any locked before `stuckBefore`. `self` is the caller's
     * worker id, whose runs only the stuck bound recovers.
     */
    recoverStale: (opts: RecoverStaleOptions): RecoveredRun[] => recoverStale(opts),
  };
}
