import type { Sqlite } from "./client";
import type { ClaimedPlannedRun, PlannedRunInsert, PlanWrite, StoredPlannedRun } from "../types";
import type { CountRecentQuery } from "@vibedout/automations/types";

/*
 * Timed actions' planned runs on SQLite: @vibedout/automations' SQL semantics (its
 * src/sql.ts: gated insert, conditional cancel, version record, token-fenced settles, lease claim)
 * on the app's tables, each planned run mirrored by its row in `runs` (same id) in the same
 * transaction, so the run log shows it and the queue executes it once dispatched.
 */

interface Row {
  id: string;
  applet_id: string;
  event_id: string;
  action_index: number;
  step_id: string;
  subject_type: string;
  subject_id: string;
  subject_version: number;
  cancel_key: string;
  contact_id: string | null;
  event_type: string;
  anchor_at: number | null;
  due_at: number;
  original_due_at: number | null;
  expires_at: number | null;
  status: string;
  reason: string | null;
  note: string | null;
  attempts: number;
  claim_token: string | null;
  lease_until: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** Both engines hand back the same row (PostgreSQL bigints as text): one mapper. */
export function toPlannedRun(r: Row): StoredPlannedRun {
  return {
    id: r.id,
    appletId: r.applet_id,
    eventId: r.event_id,
    actionIndex: Number(r.action_index),
    ruleId: r.applet_id,
    stepId: r.step_id,
    subjectType: r.subject_type,
    subjectId: r.subject_id,
    subjectVersion: Number(r.subject_version),
    cancelKey: r.cancel_key,
    contactId: r.contact_id,
    eventType: r.event_type,
    anchorAt: n(r.anchor_at),
    dueAt: Number(r.due_at),
    originalDueAt: n(r.original_due_at),
    expiresAt: n(r.expires_at),
    status: r.status as StoredPlannedRun["status"],
    reason: r.reason,
    note: r.note,
    attempts: Number(r.attempts),
    claimToken: r.claim_token,
    leaseUntil: n(r.lease_until),
    lastError: r.last_error,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    finishedAt: n(r.finished_at),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Writes a plan (lib/timed): cancels the subject's older planned runs, inserts the new ones with
 * their rows in the run log, and records the subject's version. Runs inside the caller's
 * transaction (ingest) or its own (`apply`).
 */
function planWriter(sqlite: Sqlite): (plan: PlanWrite) => { inserted: string[]; cancelled: string[] } {
  const cancelOlder = sqlite.prepare<[string, number, number, string, number], { id: string }>(
    `UPDATE planned_runs SET status = 'cancelled', reason = ?, updated_at = ?, finished_at = ?
     WHERE cancel_key = ? AND status = 'pending' AND subject_version < ? RETURNING id`,
  );
  const cancelRunRow = sqlite.prepare(
    "UPDATE runs SET status = 'cancelled', reason = ?, finished_at = ?, updated_at = ? WHERE id = ? AND status = 'planned'",
  );
  // Gated on the subject's recorded version (an event older than one already seen plans nothing);
  // ON CONFLICT makes a redelivered plan a no-op. RETURNING names what was really inserted.
  const insert = sqlite.prepare<unknown[], { id: string }>(
    `INSERT INTO planned_runs (id, applet_id, event_id, action_index, step_id, subject_type, subject_id, subject_version, cancel_key, contact_id,
       event_type, anchor_at, due_at, original_due_at, expires_at, status, reason, note, attempts, created_at, updated_at, finished_at)
     SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?
     WHERE NOT EXISTS (SELECT 1 FROM planned_subjects WHERE cancel_key = ? AND version > ?)
     ON CONFLICT(id) DO NOTHING RETURNING id`,
  );
  const insertRunRow = sqlite.prepare(
    `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, error, finished_at,
       planned_run_id, action_index, due_at, reason, created_at, updated_at)
     VALUES (@id, @applet, @event, @status, 1, @max, NULL, '[]', @error, @finished, @id, @action, @due, @reason, @created, @created)
     ON CONFLICT(id) DO NOTHING`,
  );
  const recordVersion = sqlite.prepare(
    `INSERT INTO planned_subjects (cancel_key, version, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(cancel_key) DO UPDATE SET version = max(version, excluded.version), updated_at = excluded.updated_at`,
  );
  const insertOne = (r: PlannedRunInsert): boolean => {
    const finished = r.status === "pending" ? null : r.createdAt;
    const row = insert.get(
      r.id, r.appletId, r.eventId, r.actionIndex, r.stepId, r.subjectType, r.subjectId, r.subjectVersion, r.cancelKey, r.contactId,
      r.eventType, r.anchorAt, r.dueAt, r.originalDueAt, r.expiresAt, r.status, r.reason, r.note, r.createdAt, r.createdAt, finished,
      r.cancelKey, r.subjectVersion,
    );
    if (!row) return false;
    insertRunRow.run({
      id: r.id,
      applet: r.appletId,
      event: r.eventId,
      status: r.status === "pending" ? "planned" : r.status,
      max: r.maxAttempts,
      error: r.status === "pending" ? null : r.note,
      finished: finished === null ? null : iso(finished),
      action: r.actionIndex,
      due: iso(r.dueAt),
      reason: r.reason,
      created: iso(r.createdAt),
    });
    return true;
  };
  const applyPlan = (plan: PlanWrite): { inserted: string[]; cancelled: string[] } => {
    const cancelled: string[] = [];
    if (plan.cancel) {
      for (const { id } of cancelOlder.all(plan.cancel.reason, plan.at, plan.at, plan.cancel.key, plan.cancel.belowVersion)) {
        cancelRunRow.run(plan.cancel.reason, iso(plan.at), iso(plan.at), id);
        cancelled.push(id);
      }
    }
    const inserted = plan.runs.filter(insertOne).map((r) => r.id);
    if (plan.subject) recordVersion.run(plan.subject.key, plan.subject.version, plan.at);
    return { inserted, cancelled };
  };
  return applyPlan;
}

export function createPlannedRunsRepo(sqlite: Sqlite) {
  const applyPlan = planWriter(sqlite);
  const applyTx = sqlite.transaction(applyPlan);

  // A run whose lease ran out on its last allowed attempt: its holders keep dying; stop claiming it.
  const exhausted = sqlite.prepare<[number, number, number, number], { id: string }>(
    `UPDATE planned_runs SET status = 'failed', last_error = 'the lease ran out on every attempt', claim_token = NULL, lease_until = NULL,
       updated_at = ?, finished_at = ? WHERE status = 'running' AND lease_until <= ? AND attempts >= ? RETURNING id`,
  );
  const failRunRow = sqlite.prepare(
    "UPDATE runs SET status = 'failed', error = ?, finished_at = ?, updated_at = ? WHERE id = ? AND status = 'planned'",
  );
  const claim = sqlite.prepare<unknown[], Row>(
    `UPDATE planned_runs SET status = 'running', claim_token = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
     WHERE id IN (
       SELECT id FROM (SELECT id, due_at FROM planned_runs WHERE status = 'pending' AND due_at <= ?
                       UNION ALL SELECT id, due_at FROM planned_runs WHERE status = 'running' AND lease_until <= ?)
       ORDER BY due_at, id LIMIT ?)
     RETURNING *`,
  );
  const claimTx = sqlite.transaction((now: number, o: { limit: number; leaseMs: number; maxAttempts: number; token: string }) => {
    for (const { id } of exhausted.all(now, now, now, o.maxAttempts)) failRunRow.run("the lease ran out on every attempt", iso(now), iso(now), id);
    return claim.all(o.token, now + o.leaseMs, now, now, now, Math.max(1, Math.floor(o.limit)));
  });

  const settle = (sql: string) => sqlite.prepare(`${sql} WHERE id = @id AND claim_token = @token AND status = 'running'`);
  const done = settle("UPDATE planned_runs SET status = 'done', claim_token = NULL, lease_until = NULL, updated_at = @now, finished_at = @now");
  const queueRunRow = sqlite.prepare(
    "UPDATE runs SET status = 'queued', next_attempt_at = ?, updated_at = ? WHERE id = ? AND status = 'planned'",
  );
  const dispatchTx = sqlite.transaction((run: ClaimedPlannedRun, now: number): boolean => {
    if (done.run({ id: run.id, token: run.claimToken, now }).changes !== 1) return false;
    queueRunRow.run(iso(now), iso(now), run.id);
    return true;
  });
  const skip = settle("UPDATE planned_runs SET status = 'skipped', reason = @reason, claim_token = NULL, lease_until = NULL, updated_at = @now, finished_at = @now");
  const skipRunRow = sqlite.prepare(
    "UPDATE runs SET status = 'skipped', reason = ?, finished_at = ?, updated_at = ? WHERE id = ? AND status = 'planned'",
  );
  const skipTx = sqlite.transaction((run: ClaimedPlannedRun, now: number, reason: string): boolean => {
    if (skip.run({ id: run.id, token: run.claimToken, now, reason }).changes !== 1) return false;
    skipRunRow.run(reason, iso(now), iso(now), run.id);
    return true;
  });
  const fail = settle("UPDATE planned_runs SET status = 'failed', last_error = @error, claim_token = NULL, lease_until = NULL, updated_at = @now, finished_at = @now");
  const failTx = sqlite.transaction((run: ClaimedPlannedRun, now: number, error: string | null): boolean => {
    if (fail.run({ id: run.id, token: run.claimToken, now, error }).changes !== 1) return false;
    failRunRow.run(error, iso(now), iso(now), run.id);
    return true;
  });
  const retry = settle("UPDATE planned_runs SET status = 'pending', due_at = @due, last_error = @error, claim_token = NULL, lease_until = NULL, updated_at = @now");
  const defer = settle(
    `UPDATE planned_runs SET status = 'pending', expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE expires_at + (@until - due_at) END,
       due_at = @until, attempts = max(attempts - 1, 0), claim_token = NULL, lease_until = NULL, updated_at = @now`,
  );
  const deferRunRow = sqlite.prepare("UPDATE runs SET due_at = ?, updated_at = ? WHERE id = ? AND status = 'planned'");
  const deferTx = sqlite.transaction((run: ClaimedPlannedRun, now: number, until: number): boolean => {
    if (defer.run({ id: run.id, token: run.claimToken, now, until }).changes !== 1) return false;
    deferRunRow.run(iso(until), iso(now), run.id);
    return true;
  });
  const countSent = sqlite.prepare<[string, string, number], { n: number }>(
    "SELECT count(*) AS n FROM planned_runs WHERE applet_id = ? AND contact_id = ? AND status = 'done' AND finished_at >= ?",
  );
  const countSentOrAhead = sqlite.prepare<unknown[], { n: number }>(
    `SELECT count(*) AS n FROM planned_runs WHERE applet_id = ? AND contact_id = ? AND ((status = 'done' AND finished_at >= ?)
       OR (status = 'running' AND lease_until > ? AND id <> ? AND (due_at < ? OR (due_at = ? AND id < ?))))`,
  );
  const byId = sqlite.prepare<[string], Row>("SELECT * FROM planned_runs WHERE id = ?");
  const newest = sqlite.prepare<[string, string], { subject_version: number; anchor_at: number | null }>(
    "SELECT subject_version, anchor_at FROM planned_runs WHERE cancel_key = ? AND step_id = ? ORDER BY subject_version DESC, created_at DESC LIMIT 1",
  );
  const reached = sqlite.prepare<[string], { version: number }>("SELECT version FROM planned_subjects WHERE cancel_key = ?");
  const purgeRuns = sqlite.prepare("DELETE FROM planned_runs WHERE status IN ('done', 'failed', 'cancelled', 'skipped') AND updated_at < ?");
  const purgeSubjects = sqlite.prepare(
    `DELETE FROM planned_subjects WHERE updated_at < ? AND NOT EXISTS
       (SELECT 1 FROM planned_runs r WHERE r.cancel_key = planned_subjects.cancel_key AND r.status IN ('pending', 'running'))`,
  );
  const purgeTx = sqlite.transaction((before: number) => {
    const deleted = purgeRuns.run(before).changes;
    purgeSubjects.run(before);
    return deleted;
  });

  return {
    /** For `runs.ingest`: inside its transaction. */
    applyPlan,
    repo: {
      apply: (plan: PlanWrite) => applyTx(plan),
      claimDue: (now: number, o: { limit: number; leaseMs: number; maxAttempts: number; token: string }): ClaimedPlannedRun[] =>
        claimTx(now, o).map((r) => toPlannedRun(r) as ClaimedPlannedRun),
      dispatch: (run: ClaimedPlannedRun, now: number): boolean => dispatchTx(run, now),
      skip: (run: ClaimedPlannedRun, now: number, reason: string): boolean => skipTx(run, now, reason),
      fail: (run: ClaimedPlannedRun, now: number, error: string | null): boolean => failTx(run, now, error),
      retry: (run: ClaimedPlannedRun, now: number, dueAt: number, error: string | null): boolean =>
        retry.run({ id: run.id, token: run.claimToken, now, due: dueAt, error }).changes === 1,
      defer: (run: ClaimedPlannedRun, now: number, untilMs: number): boolean => deferTx(run, now, untilMs),
      countRecent: (q: CountRecentQuery): number => {
        const a = q.inFlightBefore;
        const row = a
          ? countSentOrAhead.get(q.ruleId, q.contactId, q.since, a.now, a.id, a.dueAt, a.dueAt, a.id)
          : countSent.get(q.ruleId, q.contactId, q.since);
        return Number(row?.n ?? 0);
      },
      get: (id: string): StoredPlannedRun | null => {
        const r = byId.get(id);
        return r ? toPlannedRun(r) : null;
      },
      list: (appletId: string, o: { status?: string; limit: number }): StoredPlannedRun[] =>
        sqlite
          .prepare<unknown[], Row>(
            `SELECT * FROM planned_runs WHERE applet_id = ? ${o.status ? "AND status = ?" : ""} ORDER BY due_at, id LIMIT ?`,
          )
          .all(...(o.status ? [appletId, o.status, o.limit] : [appletId, o.limit]))
          .map(toPlannedRun),
      latest: (cancelKey: string, stepId: string) => {
        const r = newest.get(cancelKey, stepId);
        const v = reached.get(cancelKey);
        return { subjectVersion: r ? Number(r.subject_version) : null, anchorAt: r ? n(r.anchor_at) : null, reachedVersion: v ? Number(v.version) : null };
      },
      purgeFinished: (before: number): number => purgeTx(before),
    },
  };
}
