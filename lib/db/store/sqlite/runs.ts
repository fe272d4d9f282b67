import { decodeCursor, encodeCursor, toClaimed, toRun, type ClaimedAppletRaw } from "../run-row";
import { randomUUID } from "node:crypto";
import { newId } from "../../../core/ids";
import { settleNeedsAlertState } from "../../../alerts/policy";
import type { AlertsRepo } from "./alerts";
import type { Sqlite } from "./client";
import { createPlannedRunsRepo } from "./planned-runs";
import { readJson } from "../json";
import type { RunStatus, Step } from "../types/runs";
import type { runs } from "../../schema";
import { RUN_SEARCH_PAYLOAD_BYTES, RUN_SEARCH_SCAN, type AppletRunStats, type ClaimedRun, type EventRun, type FinalStatus, type Ingested, type IngestInput, type PlanWrite, type RecoveredRun, type RecoverStaleOptions, type Run, type RunChange, type RunListFilter, type RetryOptions, type RunPage, type RunTally, type RecentEvent, type StoredEvent } from "../types";
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

/** An event; a taken dedupe key inserts nothing. Parameters: id, applet, source, dedupe key, payload, received_at, created_at, updated_at. */
export const INSERT_EVENT_SQL = `INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`;
/**
 * Its queued run; next_attempt_at is set at insert so the claim can order by one indexed column.
 * Parameters: id, applet, event, max attempts, next_attempt_at, created_at, updated_at.
 */
export const INSERT_RUN_SQL = `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at)
     VALUES (?, ?, ?, 'queued', 1, ?, ?, '[]', ?, ?)`;

/**
 * Events and runs: the queue lives here. Every trigger ends in `ingest`, one transaction inserting
 * the event (deduped on applet + dedupe key) and its queued run. Every settle is fenced by the
 * claim token, so a worker whose lease was taken over changes nothing.
 */
export function createRunsRepo(
  sqlite: Sqlite,
  alerts: AlertsRepo,
  applyPlan: (plan: PlanWrite) => unknown = createPlannedRunsRepo(sqlite).applyPlan,
  /** The ingest of an event whose applet has controls over runs (./run-controls.ts). */
  ingestControlled?: (i: IngestInput) => Ingested,
) {
  const insertEvent = sqlite.prepare(INSERT_EVENT_SQL);
  const insertRun = sqlite.prepare(INSERT_RUN_SQL);
  const ingestRow = (i: IngestInput): Ingested => {
    if (i.controls && ingestControlled) return ingestControlled(i);
    const eventId = i.eventId ?? newId();
    const inserted = insertEvent.run(eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, i.receivedAt, i.receivedAt);
    if (inserted.changes === 0) return null;
    const runId = newId();
    insertRun.run(runId, i.appletId, eventId, i.maxAttempts, i.receivedAt, i.receivedAt, i.receivedAt);
    // Timed actions: planned in the event's transaction, only when the event was stored.
    if (i.plan) applyPlan(i.plan);
    return { eventId, runId };
  };
  const ingestTx = sqlite.transaction(ingestRow);
  const insertSkippedRun = sqlite.prepare(
    `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, error, finished_at, created_at, updated_at, applet_version)
     VALUES (?, ?, ?, 'skipped', 1, ?, NULL, '[]', ?, ?, ?, ?, (SELECT MAX(version) FROM applet_versions WHERE applet_id = ?))`,
  );
  const ingestSkippedTx = sqlite.transaction((i: IngestInput, reason: string): Ingested => {
    const eventId = i.eventId ?? newId();
    if (insertEvent.run(eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, i.receivedAt, i.receivedAt).changes === 0) return null;
    const runId = newId();
    insertSkippedRun.run(runId, i.appletId, eventId, i.maxAttempts, reason, i.receivedAt, i.receivedAt, i.receivedAt, i.appletId);
    if (i.plan) applyPlan(i.plan);
    return { eventId, runId };
  });
  const activeOfStmt = sqlite.prepare<[string], { queued: number; running: number }>(
    `SELECT COALESCE(SUM(status = 'queued'), 0) AS queued, COALESCE(SUM(status = 'running'), 0) AS running
     FROM runs WHERE applet_id = ? AND status IN ('queued', 'running')`,
  );
  // Group commit. The fast path inserts the whole batch in one transaction; a row can only fail
  // when its applet was deleted a moment ago, and then the batch is redone with a savepoint per
  // row so that row fails alone. (A savepoint per row always would cost a third of the insert.)
  const ingestBatchTx = sqlite.transaction((items: IngestInput[]): Ingested[] => items.map(ingestRow));
  const ingestEachTx = sqlite.transaction((items: IngestInput[]): (Ingested | Error)[] =>
    items.map((i) => {
      try {
        return ingestTx(i);
      } catch (err) {
        return err instanceof Error ? err : new Error(String(err));
      }
    }),
  );

  const claim = sqlite.prepare<{ worker: string; now: string; token: string }, RunRowRaw>(CLAIM_SQL);
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
  // The look is a plain read (almost always empty, and it runs every few seconds); only found runs
  // take the write lock.
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
  const release = sqlite.prepare(
    `UPDATE runs SET status = 'queued', locked_by = NULL, locked_at = NULL, claim_token = NULL, started_at = NULL, updated_at = @now
     WHERE id = @id AND claim_token = @token AND status = 'running'`,
  );
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
  const recentEventsOf = sqlite.prepare<{ appletId: string; limit: number }, { id: string; source: string; payload: string; received_at: string }>(
    "SELECT id, source, payload, received_at FROM events WHERE applet_id = @appletId ORDER BY received_at DESC, id DESC LIMIT @limit",
  );
  const eventOf = sqlite.prepare<[string], { id: string; applet_id: string; source: string; dedupe_key: string | null; payload: string; received_at: string }>(
    "SELECT id, applet_id, source, dedupe_key, payload, received_at FROM events WHERE id = ?",
  );
  // The first run of an event (a replay adds later ones): one index seek on the dedupe index.
  const firstOfDedupe = sqlite.prepare<[string, string], { event_id: string; run_id: string | null }>(
    `SELECT e.id AS event_id, (SELECT r.id FROM runs r WHERE r.event_id = e.id ORDER BY r.created_at, r.id LIMIT 1) AS run_id
     FROM events e WHERE e.applet_id = ? AND e.dedupe_key = ?`,
  );
  const statusesOf = sqlite.prepare<[string], { id: string; status: RunStatus }>("SELECT id, status FROM runs WHERE id IN (SELECT value FROM json_each(?))");
  const appletOf = sqlite.prepare<[string], ClaimedAppletRaw>("SELECT id, name, definition, updated_at FROM applets WHERE id = ?");
  const earlierRunOfEvent = sqlite.prepare<{ eventId: string; createdAt: string; id: string }, { one: number }>(
    `SELECT 1 AS one FROM runs WHERE event_id = @eventId AND id <> @id
       AND (created_at < @createdAt OR (created_at = @createdAt AND id < @id)) LIMIT 1`,
  );
  const runsOfEvent = sqlite.prepare<{ eventId: string; limit: number }, { id: string; status: RunStatus; created_at: string }>(
    "SELECT id, status, created_at FROM runs WHERE event_id = @eventId ORDER BY created_at, id LIMIT @limit",
  );
  // Keyset order (updated_at, id), so a page boundary inside one millisecond loses nothing.
  // The finished runs of the window through runs_created_idx; queued and running ones through their
  // partial indexes, however old (a backlog is what a dashboard must see). Named (INDEXED BY): left
  // to itself the planner walked runs_applet_created_idx over every run stored, for the GROUP BY order.
  const tallyByApplet = sqlite.prepare<[string], { applet_id: string; status: string; n: number }>(
    `SELECT applet_id, status, COUNT(*) AS n FROM runs INDEXED BY runs_created_idx WHERE created_at >= ? AND status NOT IN ('queued', 'running') GROUP BY applet_id, status
     UNION ALL SELECT applet_id, 'queued', COUNT(*) FROM runs INDEXED BY runs_queued_idx WHERE status = 'queued' GROUP BY applet_id
     UNION ALL SELECT applet_id, 'running', COUNT(*) FROM runs INDEXED BY runs_running_idx WHERE status = 'running' GROUP BY applet_id`,
  );
  const queueTally = sqlite.prepare<[{ now: string }], { queued: number; oldest_due: string | null }>(
    `SELECT COUNT(*) AS queued, MIN(CASE WHEN COALESCE(next_attempt_at, created_at) <= @now THEN COALESCE(next_attempt_at, created_at) END) AS oldest_due
     FROM runs WHERE status = 'queued'`,
  );
  const changedAfter = sqlite.prepare<{ at: string; id: string; limit: number }, { id: string; applet_id: string; status: string; updated_at: string }>(
    `SELECT id, applet_id, status, updated_at FROM runs
     WHERE updated_at >= @at AND (updated_at > @at OR id > @id)
     ORDER BY updated_at, id LIMIT @limit`,
  );

  const finishTx = sqlite.transaction(
    (id: string, token: string, status: RunStatus, steps: Step[] | null, error: string | null, now: string, appletId: string, attempt: number): boolean => {
      const ok = finish.run({ id, token, status, steps: steps === null ? null : JSON.stringify(steps), error, now }).changes === 1;
      if (ok) {
        const [bumped] = bumpApplet.all({ now, status, id: appletId });
        if (bumped && settleNeedsAlertState(status, bumped.alert_open === 1)) alerts.recordSettled(appletId, { id, status, error, attempt }, now);
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
    ingestSkipped: (i: IngestInput, reason: string): Ingested => ingestSkippedTx(i, reason),
    activeOf: (appletId: string): { queued: number; running: number } => {
      const r = activeOfStmt.all(appletId)[0];
      return { queued: Number(r?.queued ?? 0), running: Number(r?.running ?? 0) };
    },
    /** The status of each of these runs (one query for every webhook waiting on its run). */
    statuses(ids: string[]): Map<string, RunStatus> {
      return new Map(statusesOf.all(JSON.stringify(ids)).map((r) => [r.id, r.status]));
    },
    /** The event a dedupe key was first stored with, and its first run (what a redelivery is told). */
    firstOfDedupeKey(appletId: string, dedupeKey: string): { eventId: string; runId: string | null } | null {
      const row = firstOfDedupe.get(appletId, dedupeKey);
      return row ? { eventId: row.event_id, runId: row.run_id } : null;
    },
    ingest: (i: IngestInput) => ingestTx(i),

    /**
     * Group commit: many ingests, one commit, so the shared index pages are written once for the
     * whole batch instead of once per webhook. One failing row fails alone (its slot holds the Error).
     */
    ingestMany: (items: IngestInput[]): (Ingested | Error)[] => {
      try {
        return ingestBatchTx(items);
      } catch {
        // Rolled back as a whole: nothing of the batch is stored, so redoing it row by row is safe.
        return ingestEachTx(items);
      }
    },

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

    get: (id: string): Run | null => {
      const r = byId.get(id);
      return r ? toRun(r) : null;
    },

    event: (eventId: string): StoredEvent | null => {
      const e = eventOf.get(eventId);
      return e
        ? { id: e.id, appletId: e.applet_id, source: e.source, dedupeKey: e.dedupe_key, payload: readJson<Record<string, unknown>>(e.payload, `the stored payload of event ${e.id}`), receivedAt: e.received_at }
        : null;
    },

    /** The editor's sample picker: this applet's latest events, newest first. */
    recentEvents: (appletId: string, limit: number): RecentEvent[] =>
      recentEventsOf.all({ appletId, limit }).map((e) => ({ id: e.id, source: e.source, receivedAt: e.received_at, payload: readJson<Record<string, unknown>>(e.payload, `the stored payload of event ${e.id}`) })),

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

    /** A page of runs, newest first, by keyset cursor; a search is bounded (RUN_SEARCH_SCAN). */
    list: (f: RunListFilter): RunPage => {
      const limit = Math.min(Math.max(f.limit ?? 50, 1), 200);
      const where: string[] = [];
      const args: unknown[] = [];
      const add = (clause: string, value: unknown) => {
        where.push(clause);
        args.push(value);
      };
      if (f.appletId) add("r.applet_id = ?", f.appletId);
      // `retrying` is a queued run after a failed attempt, and `queued` the ones not yet tried (lib/ui/run-status).
      if (f.status === "retrying") where.push("r.status = 'queued' AND r.attempt > 1");
      else if (f.status === "queued") where.push("r.status = 'queued' AND r.attempt = 1");
      else if (f.status) add("r.status = ?", f.status);
      if (f.reason) add("r.reason = ?", f.reason);
      if (f.from) add("r.created_at >= ?", f.from);
      if (f.to) add("r.created_at <= ?", f.to);
      if (f.cursor) {
        const [createdAt, id] = decodeCursor(f.cursor);
        where.push("(r.created_at < ? OR (r.created_at = ? AND r.id < ?))");
        args.push(createdAt, createdAt, id);
      }
      const whereSql = (w: string[]) => (w.length ? "WHERE " + w.join(" AND ") : "");
      const order = "ORDER BY r.created_at DESC, r.id DESC";
      const searching = Boolean(f.errorText || f.payloadText);
      const scan = Math.min(Math.max(Math.trunc(f.searchScan ?? RUN_SEARCH_SCAN), 1), RUN_SEARCH_SCAN);
      // A search looks at the newest RUN_SEARCH_SCAN runs the other filters select, no further:
      // the boundary is the last of them (an index walk of that many entries), and the matches are
      // looked for only between the cursor and it.
      // The last run inside the bound, and the one after it: none after it, and no bound is needed.
      const edge = searching ? sqlite.prepare<unknown[], { created_at: string; id: string }>(`SELECT r.created_at, r.id FROM runs r ${whereSql(where)} ${order} LIMIT 2 OFFSET ${scan - 1}`).all(...args) : [];
      const boundary = edge.length === 2 ? edge[0] : undefined;
      const searchWhere = [...where];
      const searchArgs = [...args];
      if (boundary) {
        searchWhere.push("(r.created_at > ? OR (r.created_at = ? AND r.id >= ?))");
        searchArgs.push(boundary.created_at, boundary.created_at, boundary.id);
      }
      if (f.errorText) {
        searchWhere.push("r.error IS NOT NULL AND instr(lower(r.error), lower(?)) > 0");
        searchArgs.push(f.errorText);
      }
      const join = f.payloadText ? "JOIN events e ON e.id = r.event_id" : "";
      if (f.payloadText) {
        searchWhere.push(`instr(lower(substr(e.payload, 1, ${RUN_SEARCH_PAYLOAD_BYTES})), lower(?)) > 0`);
        searchArgs.push(f.payloadText);
      }
      const sql = `SELECT r.* FROM runs r ${join} ${whereSql(searchWhere)} ${order} LIMIT ${limit + 1}`;
      const rows = sqlite.prepare<unknown[], RunRowRaw>(sql).all(...searchArgs);
      const page = rows.slice(0, limit).map(toRun);
      const last = page[page.length - 1];
      if (rows.length > limit && last) return { runs: page, nextCursor: encodeCursor(last.createdAt, last.id) };
      // The page did not fill: either nothing more matches, or the search reached its bound.
      return boundary ? { runs: page, nextCursor: encodeCursor(boundary.created_at, boundary.id), searchStoppedAt: boundary.created_at } : { runs: page, nextCursor: null };
    },

    /** The runs of one event, oldest first: the original, then its replays. */
    ofEvent: (eventId: string, limit: number): EventRun[] =>
      runsOfEvent.all({ eventId, limit }).map((r) => ({ id: r.id, status: r.status, createdAt: r.created_at })),

    /**
     * For the SSE stream: runs whose (updated_at, id) comes after (`at`, `id`), oldest change
     * first. `id` "" starts at `at` itself (updated_at >= at).
     */
    changedAfter: (at: string, id: string, limit = 500): RunChange[] => changedAfter.all({ at, id, limit }),

    /** Runs created in the last 24 h and the latest run, per applet (applets list). */
    statsByApplet: (since: string): AppletRunStats[] =>
      sqlite
        .prepare<[{ since: string }], AppletRunStats>(
          `SELECT a.id AS applet_id,
                  (SELECT COUNT(*) FROM runs r WHERE r.applet_id = a.id AND r.created_at >= @since) AS runs_24h,
                  (SELECT COUNT(*) FROM runs r WHERE r.applet_id = a.id AND r.created_at >= @since AND r.status IN ('failed', 'dead')) AS failed_24h,
                  (SELECT CASE WHEN status = 'queued' AND attempt > 1 THEN 'retrying' ELSE status END FROM runs r WHERE r.applet_id = a.id ORDER BY r.created_at DESC LIMIT 1) AS last_status,
                  (SELECT created_at FROM runs r WHERE r.applet_id = a.id ORDER BY r.created_at DESC LIMIT 1) AS last_at
           FROM applets a`,
        )
        .all({ since }),

    /** Runs per applet and status, the queue depth and its oldest due run (GET /metrics). */
    tally: (since: string, now: Date): RunTally => {
      const byApplet = tallyByApplet.all(since).map((r) => ({ appletId: r.applet_id, status: r.status, count: r.n }));
      const q = queueTally.get({ now: now.toISOString() })!;
      return { byApplet, queued: q.queued, oldestDueAt: q.oldest_due };
    },
  };
}
