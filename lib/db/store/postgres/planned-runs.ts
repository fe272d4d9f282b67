import type { CountRecentQuery } from "@vibedout/automations/types";
import { toPlannedRun } from "../sqlite/planned-runs";
import type { ClaimedPlannedRun, PlannedRunInsert, PlannedRunsStore, PlanWrite, StoredPlannedRun } from "../types";
import { query, queryDynamic, type Begin, type Queryable } from "./pool";

/**
 * Timed actions' planned runs on PostgreSQL: the same semantics as the SQLite store
 * (lib/db/store/sqlite/planned-runs.ts), each planned run mirrored by its `runs` row. The claim
 * takes its rows FOR UPDATE SKIP LOCKED, like the queue's, so concurrent sweeps in several worker
 * processes take disjoint runs and never wait on each other.
 */
type Row = Parameters<typeof toPlannedRun>[0];
const iso = (ms: number) => new Date(ms).toISOString();

const INSERT = `WITH ins AS (
    INSERT INTO planned_runs (id, applet_id, event_id, action_index, step_id, subject_type, subject_id, subject_version, cancel_key, contact_id,
      event_type, anchor_at, due_at, original_due_at, expires_at, status, reason, note, attempts, created_at, updated_at, finished_at)
    SELECT $1::text, $2::text, $3::text, $4::int, $5::text, $6::text, $7::text, $8::bigint, $9::text, $10::text, $11::text, $12::bigint, $13::bigint,
      $14::bigint, $15::bigint, $16::text, $17::text, $18::text, 0, $19::bigint, $19::bigint, $20::bigint
    WHERE NOT EXISTS (SELECT 1 FROM planned_subjects WHERE cancel_key = $9::text AND version > $8::bigint)
    ON CONFLICT (id) DO NOTHING RETURNING id
  )
  INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, error, finished_at,
    planned_run_id, action_index, due_at, reason, created_at, updated_at)
  SELECT ins.id, $2::text, $3::text, $21::text, 1, $22::int, NULL, '[]', $23::text, $24::text, ins.id, $4::int, $25::text, $17::text, $26::text, $26::text FROM ins
  ON CONFLICT (id) DO NOTHING
  RETURNING id`;

const CANCEL = `WITH c AS (
    UPDATE planned_runs SET status = 'cancelled', reason = $1, updated_at = $2, finished_at = $2
    WHERE cancel_key = $3 AND status = 'pending' AND subject_version < $4 RETURNING id
  ), r AS (
    UPDATE runs SET status = 'cancelled', reason = $1, finished_at = $5, updated_at = $5
    FROM c WHERE runs.id = c.id AND runs.status = 'planned'
  )
  SELECT id FROM c`;

const RECORD = `INSERT INTO planned_subjects (cancel_key, version, updated_at) VALUES ($1, $2, $3)
  ON CONFLICT (cancel_key) DO UPDATE SET version = GREATEST(planned_subjects.version, excluded.version), updated_at = excluded.updated_at`;

/** Inside the caller's transaction (the ingest of the event), on its client. */
export async function applyPlanOn(c: Queryable, plan: PlanWrite): Promise<{ inserted: string[]; cancelled: string[] }> {
  const cancelled: string[] = [];
  if (plan.cancel) {
    const r = await query<{ id: string }>(c, CANCEL, [plan.cancel.reason, plan.at, plan.cancel.key, plan.cancel.belowVersion, iso(plan.at)]);
    cancelled.push(...r.rows.map((x) => x.id));
  }
  const inserted: string[] = [];
  for (const r of plan.runs) if (await insertOne(c, r)) inserted.push(r.id);
  if (plan.subject) await query(c, RECORD, [plan.subject.key, plan.subject.version, plan.at]);
  return { inserted, cancelled };
}

async function insertOne(c: Queryable, r: PlannedRunInsert): Promise<boolean> {
  const finished = r.status === "pending" ? null : r.createdAt;
  const res = await query(c, INSERT, [
    r.id, r.appletId, r.eventId, r.actionIndex, r.stepId, r.subjectType, r.subjectId, r.subjectVersion, r.cancelKey, r.contactId,
    r.eventType, r.anchorAt, r.dueAt, r.originalDueAt, r.expiresAt, r.status, r.reason, r.note, r.createdAt, finished,
    r.status === "pending" ? "planned" : r.status, r.maxAttempts, r.status === "pending" ? null : r.note, finished === null ? null : iso(finished),
    iso(r.dueAt), iso(r.createdAt),
  ]);
  return res.rowCount === 1;
}

/** Fails the planned runs whose lease ran out on their last attempt, then claims the due ones (PlannedRunsStore#claimDue). */
async function claimDueOn(c: Queryable, now: number, o: Parameters<PlannedRunsStore["claimDue"]>[1]): Promise<ClaimedPlannedRun[]> {
  await query(
    c,
    `WITH x AS (
             UPDATE planned_runs SET status = 'failed', last_error = 'the lease ran out on every attempt', claim_token = NULL, lease_until = NULL,
               updated_at = $1, finished_at = $1 WHERE status = 'running' AND lease_until <= $1 AND attempts >= $2 RETURNING id)
           UPDATE runs SET status = 'failed', error = 'the lease ran out on every attempt', finished_at = $3, updated_at = $3
           FROM x WHERE runs.id = x.id AND runs.status = 'planned'`,
    [now, o.maxAttempts, iso(now)],
  );
  const rows = (
    await query<Row>(
      c,
      `WITH picked AS (
               SELECT id FROM planned_runs
               WHERE (status = 'pending' AND due_at <= $1) OR (status = 'running' AND lease_until <= $1)
               ORDER BY due_at, id LIMIT $2
               FOR UPDATE SKIP LOCKED
             )
             UPDATE planned_runs p SET status = 'running', claim_token = $3, lease_until = $4, attempts = p.attempts + 1, updated_at = $1
             FROM picked WHERE p.id = picked.id
             RETURNING p.*`,
      [now, Math.max(1, Math.floor(o.limit)), o.token, now + o.leaseMs],
    )
  ).rows;
  return rows.map((r) => toPlannedRun(r) as ClaimedPlannedRun);
}

const FENCE = "WHERE id = $1 AND claim_token = $2 AND status = 'running'";

export function plannedRunsStore(q: Queryable, begin: Begin): PlannedRunsStore {
  /** A settle of the planned run and, when it changed, the same change on its `runs` row. */
  const settleBoth = (planned: string, runRow: string | null, params: unknown[], runParams: (now: number) => unknown[]) =>
    async (run: ClaimedPlannedRun, now: number): Promise<boolean> => {
      const sql = runRow
        ? `WITH p AS (${planned} ${FENCE} RETURNING id), r AS (${runRow} FROM p WHERE runs.id = p.id AND runs.status = 'planned') SELECT id FROM p`
        : `${planned} ${FENCE} RETURNING id`;
      const r = await query(q, sql, [run.id, run.claimToken, now, ...params, ...(runRow ? runParams(now) : [])]);
      return r.rowCount === 1;
    };
  return {
    apply: (plan) => begin((c) => applyPlanOn(c, plan)),

    claimDue: (now, o) => begin((c) => claimDueOn(c, now, o)),

    dispatch: settleBoth(
      "UPDATE planned_runs SET status = 'done', claim_token = NULL, lease_until = NULL, updated_at = $3, finished_at = $3",
      "UPDATE runs SET status = 'queued', next_attempt_at = $4, updated_at = $4",
      [],
      (now) => [iso(now)],
    ),

    skip: (run, now, reason) =>
      settleBoth(
        "UPDATE planned_runs SET status = 'skipped', reason = $4, claim_token = NULL, lease_until = NULL, updated_at = $3, finished_at = $3",
        "UPDATE runs SET status = 'skipped', reason = $4, finished_at = $5, updated_at = $5",
        [reason],
        (t) => [iso(t)],
      )(run, now),

    fail: (run, now, error) =>
      settleBoth(
        "UPDATE planned_runs SET status = 'failed', last_error = $4, claim_token = NULL, lease_until = NULL, updated_at = $3, finished_at = $3",
        "UPDATE runs SET status = 'failed', error = $4, finished_at = $5, updated_at = $5",
        [error],
        (t) => [iso(t)],
      )(run, now),

    retry: (run, now, dueAt, error) =>
      settleBoth(
        "UPDATE planned_runs SET status = 'pending', due_at = $4, last_error = $5, claim_token = NULL, lease_until = NULL, updated_at = $3",
        null,
        [dueAt, error],
        () => [],
      )(run, now),

    defer: (run, now, untilMs) =>
      settleBoth(
        `UPDATE planned_runs SET status = 'pending', expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE expires_at + ($4 - due_at) END,
           due_at = $4, attempts = GREATEST(attempts - 1, 0), claim_token = NULL, lease_until = NULL, updated_at = $3`,
        "UPDATE runs SET due_at = $5, updated_at = $6",
        [untilMs],
        (t) => [iso(untilMs), iso(t)],
      )(run, now),

    countRecent: async (cq: CountRecentQuery) => {
      const a = cq.inFlightBefore;
      const r = a
        ? await query<{ n: string }>(
            q,
            `SELECT count(*) AS n FROM planned_runs WHERE applet_id = $1 AND contact_id = $2 AND ((status = 'done' AND finished_at >= $3)
               OR (status = 'running' AND lease_until > $4 AND id <> $5 AND (due_at < $6 OR (due_at = $6 AND id < $5))))`,
            [cq.ruleId, cq.contactId, cq.since, a.now, a.id, a.dueAt],
          )
        : await query<{ n: string }>(
            q,
            "SELECT count(*) AS n FROM planned_runs WHERE applet_id = $1 AND contact_id = $2 AND status = 'done' AND finished_at >= $3",
            [cq.ruleId, cq.contactId, cq.since],
          );
      return Number(r.rows[0]?.n ?? 0);
    },

    get: async (id) => {
      const r = (await query<Row>(q, "SELECT * FROM planned_runs WHERE id = $1", [id])).rows[0];
      return r ? toPlannedRun(r) : null;
    },

    list: async (appletId, o): Promise<StoredPlannedRun[]> =>
      (
        await queryDynamic<Row>(
          q,
          `SELECT * FROM planned_runs WHERE applet_id = $1 ${o.status ? "AND status = $3" : ""} ORDER BY due_at, id LIMIT $2`,
          o.status ? [appletId, o.limit, o.status] : [appletId, o.limit],
        )
      ).rows.map(toPlannedRun),

    latest: async (cancelKey, stepId) => {
      const r = (
        await query<{ subject_version: string; anchor_at: string | null }>(
          q,
          "SELECT subject_version, anchor_at FROM planned_runs WHERE cancel_key = $1 AND step_id = $2 ORDER BY subject_version DESC, created_at DESC LIMIT 1",
          [cancelKey, stepId],
        )
      ).rows[0];
      const v = (await query<{ version: string }>(q, "SELECT version FROM planned_subjects WHERE cancel_key = $1", [cancelKey])).rows[0];
      return {
        subjectVersion: r ? Number(r.subject_version) : null,
        anchorAt: r && r.anchor_at !== null ? Number(r.anchor_at) : null,
        reachedVersion: v ? Number(v.version) : null,
      };
    },

    purgeFinished: (before) =>
      begin(async (c) => {
        const r = await query(c, "DELETE FROM planned_runs WHERE status IN ('done', 'failed', 'cancelled', 'skipped') AND updated_at < $1", [before]);
        await query(
          c,
          `DELETE FROM planned_subjects WHERE updated_at < $1 AND NOT EXISTS
             (SELECT 1 FROM planned_runs r WHERE r.cancel_key = planned_subjects.cancel_key AND r.status IN ('pending', 'running'))`,
          [before],
        );
        return r.rowCount ?? 0;
      }),
  };
}
