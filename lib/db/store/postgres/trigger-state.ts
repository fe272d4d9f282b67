import { toTriggerState, type TriggerStateRaw } from "../trigger-state-row";
import type { TriggerState } from "../types/trigger-state";
import type { TriggerOverview, TriggerStateStore } from "../types";
import type { AlertRecorder } from "./alerts";
import { query, type Begin, type Queryable } from "./pool";

/** PostgreSQL hands json columns back parsed. */
const toState = (r: TriggerStateRaw) => toTriggerState(r, "parsed");

/** $1 applet, $2 last polled, $3 seen keys, $4 last value, $5 etag, $6 last modified, $7 last error, $8 error count, $9 now. */
const stateParams = (appletId: string, s: Omit<TriggerState, "nextRunAt">, now: string) => [
  appletId,
  s.lastPolledAt,
  JSON.stringify(s.seenKeys),
  s.lastValue === undefined || s.lastValue === null ? null : JSON.stringify(s.lastValue),
  s.etag,
  s.lastModified,
  s.lastError,
  s.errorCount,
  now,
];

interface ScheduledRaw {
  applet_id: string;
  trigger_type: string;
  definition: string;
  enabled: number;
  next_run_at: string;
  error_count: number;
  created_at: string;
  updated_at: string;
}

export function triggerStateStore(q: Queryable, begin: Begin, alerts: AlertRecorder): TriggerStateStore {
  return {
    get: async (appletId) => {
      const r = (await query<TriggerStateRaw>(q, "SELECT * FROM trigger_state WHERE applet_id = $1", [appletId])).rows[0];
      return r ? toState(r) : null;
    },
    save: async (appletId, s, now) => {
      await query(
        q,
        `INSERT INTO trigger_state (applet_id, next_run_at, last_polled_at, seen_keys, last_value, etag, last_modified, last_error, error_count, created_at, updated_at)
         VALUES ($1, $10, $2, $3::json, $4::json, $5, $6, $7, $8, $9, $9)
         ON CONFLICT (applet_id) DO UPDATE SET next_run_at = excluded.next_run_at, last_polled_at = excluded.last_polled_at,
           seen_keys = excluded.seen_keys, last_value = excluded.last_value, etag = excluded.etag, last_modified = excluded.last_modified,
           last_error = excluded.last_error, error_count = excluded.error_count, updated_at = excluded.updated_at`,
        [...stateParams(appletId, s, now), s.nextRunAt],
      );
    },
    setNextRunAt: async (appletId, nextRunAt, now) => {
      await query(
        q,
        `INSERT INTO trigger_state (applet_id, next_run_at, created_at, updated_at) VALUES ($1, $2, $3, $3)
         ON CONFLICT (applet_id) DO UPDATE SET next_run_at = excluded.next_run_at, updated_at = excluded.updated_at`,
        [appletId, nextRunAt, now],
      );
    },
    claimSlot: async (appletId, expected, next, now) =>
      (await query(q, "UPDATE trigger_state SET next_run_at = $1, updated_at = $2 WHERE applet_id = $3 AND next_run_at IS NOT DISTINCT FROM $4::text", [next, now, appletId, expected]))
        .rowCount === 1,
    claimDue: async (appletId, expected, next, now) =>
      (
        await query(
          q,
          "UPDATE trigger_state SET next_run_at = $1, pending_slot = $4, updated_at = $2 WHERE applet_id = $3 AND next_run_at IS NOT DISTINCT FROM $4::text",
          [next, now, appletId, expected],
        )
      ).rowCount === 1,
    savePolled: (appletId, s, now, slot = null) =>
      begin(async (c) => {
        const before = (await query<{ error_count: number }>(c, "SELECT error_count FROM trigger_state WHERE applet_id = $1 FOR UPDATE", [appletId])).rows[0]?.error_count ?? 0;
        const ok = (
        await query(
          c,
          `UPDATE trigger_state SET last_polled_at = $2, seen_keys = $3::json, last_value = $4::json, etag = $5, last_modified = $6,
             last_error = $7, error_count = $8, updated_at = $9,
             pending_slot = CASE WHEN pending_slot = $10::text THEN NULL ELSE pending_slot END
           WHERE applet_id = $1`,
          [...stateParams(appletId, s, now), slot],
        )
      ).rowCount === 1;
        if (ok) await alerts.recordPolled(c, appletId, before, s.errorCount, s.lastError, now);
        return ok;
      }),
    listPending: async () =>
      (
        await query<{ applet_id: string; trigger_type: string; pending_slot: string }>(
          q,
          `SELECT ts.applet_id, a.trigger_type, ts.pending_slot FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
           WHERE ts.pending_slot IS NOT NULL`,
        )
      ).rows,
    clearPending: async (appletId, slot) => {
      await query(q, "UPDATE trigger_state SET pending_slot = NULL WHERE applet_id = $1 AND pending_slot = $2", [appletId, slot]);
    },
    setLastError: async (appletId, error, now) => {
      await query(q, "UPDATE trigger_state SET last_error = $1, updated_at = $2 WHERE applet_id = $3", [error, now, appletId]);
    },
    lastErrors: async () =>
      (
        await query<{ appletId: string; lastError: string }>(
          q,
          `SELECT applet_id AS "appletId", last_error AS "lastError" FROM trigger_state WHERE last_error IS NOT NULL ORDER BY applet_id`,
        )
      ).rows,
    overview: async () =>
      (
        await query<TriggerOverview>(
          q,
          `SELECT applet_id AS "appletId", last_error AS "lastError", error_count AS "errorCount", next_run_at AS "nextRunAt", last_polled_at AS "lastPolledAt"
           FROM trigger_state WHERE last_error IS NOT NULL OR next_run_at IS NOT NULL ORDER BY applet_id`,
        )
      ).rows,
    listScheduled: async (opts) => {
      if (opts.types.length === 0) return [];
      const due = opts.dueAt !== undefined;
      const rows = (
        await query<ScheduledRaw>(
          q,
          `SELECT ts.applet_id, a.trigger_type, a.definition::text AS definition, a.enabled, ts.next_run_at, ts.error_count, a.created_at, ts.updated_at
           FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
           WHERE ts.next_run_at IS NOT NULL AND ($1::text IS NULL OR ts.next_run_at <= $1::text)
             AND a.trigger_type = ANY($2::text[]) AND ($3::boolean IS FALSE OR a.enabled = 1)
           ORDER BY ts.next_run_at, ts.applet_id
           LIMIT $4::int`,
          [due ? opts.dueAt : null, [...opts.types], opts.enabledOnly ?? false, opts.limit ?? null],
        )
      ).rows;
      return rows.map((r) => ({ ...r, enabled: r.enabled === 1 }));
    },
    listUnscheduled: async (types) =>
      (
        await query<{ applet_id: string; trigger_type: string; definition: string }>(
          q,
          `SELECT ts.applet_id, a.trigger_type, a.definition::text AS definition FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
           WHERE ts.next_run_at IS NULL AND a.enabled = 1 AND a.trigger_type = ANY($1::text[])`,
          [[...types]],
        )
      ).rows,
  };
}
