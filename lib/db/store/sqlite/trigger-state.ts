import type { AlertsRepo } from "./alerts";
import type { Sqlite } from "./client";
import type { TriggerState } from "../types/trigger-state";
import { toTriggerState } from "../trigger-state-row";
import type { triggerState } from "./schema";
import type { PendingSlot, ScheduledApplet, TriggerError, TriggerOverview } from "../types";
import type { RawRow } from "./rows";

type Raw = RawRow<typeof triggerState>;
type ScheduledRowRaw = Omit<ScheduledApplet, "enabled"> & { enabled: number };

/** SQLite hands JSON columns back as their stored text. */
const toState = (r: Raw) => toTriggerState(r, "text");

/** The named parameters every trigger_state write binds (all columns but next_run_at). */
const stateParams = (appletId: string, s: Omit<TriggerState, "nextRunAt">, now: string) => ({
  appletId,
  lastPolledAt: s.lastPolledAt,
  seenKeys: JSON.stringify(s.seenKeys),
  lastValue: s.lastValue === undefined || s.lastValue === null ? null : JSON.stringify(s.lastValue),
  etag: s.etag,
  lastModified: s.lastModified,
  lastError: s.lastError,
  errorCount: s.errorCount,
  now,
});

/** One row per applet; only the scheduler (and applet save/enable, for next_run_at) writes it. */
export function createTriggerStateRepo(sqlite: Sqlite, alerts: AlertsRepo) {
  const get = sqlite.prepare<[string], Raw>("SELECT * FROM trigger_state WHERE applet_id = ?");
  const upsert = sqlite.prepare(
    `INSERT INTO trigger_state (applet_id, next_run_at, last_polled_at, seen_keys, last_value, etag, last_modified, last_error, error_count, created_at, updated_at)
     VALUES (@appletId, @nextRunAt, @lastPolledAt, @seenKeys, @lastValue, @etag, @lastModified, @lastError, @errorCount, @now, @now)
     ON CONFLICT(applet_id) DO UPDATE SET next_run_at = excluded.next_run_at, last_polled_at = excluded.last_polled_at,
       seen_keys = excluded.seen_keys, last_value = excluded.last_value, etag = excluded.etag, last_modified = excluded.last_modified,
       last_error = excluded.last_error, error_count = excluded.error_count, updated_at = excluded.updated_at`,
  );
  const setNext = sqlite.prepare(
    `INSERT INTO trigger_state (applet_id, next_run_at, created_at, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT(applet_id) DO UPDATE SET next_run_at = excluded.next_run_at, updated_at = excluded.updated_at`,
  );
  const claimSlot = sqlite.prepare(
    "UPDATE trigger_state SET next_run_at = ?, updated_at = ? WHERE applet_id = ? AND next_run_at IS ?",
  );
  // The scheduler's claim: the slot moves on and is remembered as pending until its outcome is stored.
  const claimDue = sqlite.prepare(
    "UPDATE trigger_state SET next_run_at = ?, pending_slot = ?, updated_at = ? WHERE applet_id = ? AND next_run_at IS ?",
  );
  // Scheduler (lib/tick): what a poll wrote, leaving next_run_at to the claim that owns it. The
  // pending mark is cleared only if it is still this poll's slot (a later claim keeps its own).
  const savePolled = sqlite.prepare(
    `UPDATE trigger_state SET last_polled_at = @lastPolledAt, seen_keys = @seenKeys, last_value = @lastValue, etag = @etag,
       last_modified = @lastModified, last_error = @lastError, error_count = @errorCount, updated_at = @now,
       pending_slot = CASE WHEN pending_slot = @slot THEN NULL ELSE pending_slot END
     WHERE applet_id = @appletId`,
  );
  const errorCountOf = sqlite.prepare<[string], { error_count: number }>("SELECT error_count FROM trigger_state WHERE applet_id = ?");
  // The outcome and the alert it means (a threshold crossed, or a recovery) commit together.
  const savePolledTx = sqlite.transaction((appletId: string, s: Omit<TriggerState, "nextRunAt">, now: string, slot: string | null): boolean => {
    const before = errorCountOf.get(appletId)?.error_count ?? 0;
    const ok = savePolled.run({ ...stateParams(appletId, s, now), slot }).changes === 1;
    if (ok) alerts.recordPolled(appletId, before, s.errorCount, s.lastError, now);
    return ok;
  });
  const clearPending = sqlite.prepare("UPDATE trigger_state SET pending_slot = NULL WHERE applet_id = ? AND pending_slot = ?");
  const pending = sqlite.prepare<[], { applet_id: string; trigger_type: string; pending_slot: string }>(
    `SELECT ts.applet_id, a.trigger_type, ts.pending_slot FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
     WHERE ts.pending_slot IS NOT NULL`,
  );
  const setError = sqlite.prepare("UPDATE trigger_state SET last_error = ?, updated_at = ? WHERE applet_id = ?");
  const lastErrors = sqlite.prepare<[], TriggerError>(
    "SELECT applet_id AS appletId, last_error AS lastError FROM trigger_state WHERE last_error IS NOT NULL ORDER BY applet_id",
  );
  const overview = sqlite.prepare<[], TriggerOverview>(
    `SELECT applet_id AS appletId, last_error AS lastError, error_count AS errorCount, next_run_at AS nextRunAt, last_polled_at AS lastPolledAt
     FROM trigger_state WHERE last_error IS NOT NULL OR next_run_at IS NOT NULL ORDER BY applet_id`,
  );
  const scheduledCache = new Map<string, ReturnType<typeof sqlite.prepare<unknown[], ScheduledRowRaw>>>();
  /**
   * Polled applets with a next_run_at, ordered by it. Driven by trigger_state_next_run_idx: a due
   * query reads the due rows only, however many are stored. The unary `+` keeps the planner off
   * applets_trigger_type_idx, which would scan every enabled applet of those types and sort them.
   */
  const scheduledStatement = (types: number, due: boolean, enabledOnly: boolean, limited: boolean) => {
    const key = `${types}:${due}:${enabledOnly}:${limited}`;
    let stmt = scheduledCache.get(key);
    if (!stmt) {
      stmt = sqlite.prepare<unknown[], ScheduledRowRaw>(
        `SELECT ts.applet_id, a.trigger_type, a.definition, a.enabled, ts.next_run_at, ts.error_count, a.created_at, ts.updated_at
         FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
         WHERE ${due ? "ts.next_run_at <= ?" : "ts.next_run_at IS NOT NULL"}
           AND +a.trigger_type IN (${Array.from({ length: types }, () => "?").join(", ")})
           ${enabledOnly ? "AND +a.enabled = 1" : ""}
         ORDER BY ts.next_run_at, ts.applet_id ${limited ? "LIMIT ?" : ""}`,
      );
      scheduledCache.set(key, stmt);
    }
    return stmt;
  };
  const unscheduled = sqlite.prepare<unknown[], { applet_id: string; trigger_type: string; definition: string }>(
    `SELECT ts.applet_id, a.trigger_type, a.definition FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
     WHERE ts.next_run_at IS NULL AND +a.enabled = 1 AND +a.trigger_type IN (SELECT value FROM json_each(?))`,
  );
  return {
    get: (appletId: string): TriggerState | null => {
      const r = get.get(appletId);
      return r ? toState(r) : null;
    },
    save: (appletId: string, s: TriggerState, now: string): void => void upsert.run({ ...stateParams(appletId, s, now), nextRunAt: s.nextRunAt }),
    /** The one source of next_run_at for a saved or enabled applet. */
    setNextRunAt: (appletId: string, nextRunAt: string | null, now: string): void => void setNext.run(appletId, nextRunAt, now, now),
    /** Atomically moves next_run_at from the slot we saw to the next one: false when another worker got there first. */
    claimSlot: (appletId: string, expected: string | null, next: string, now: string): boolean =>
      claimSlot.run(next, now, appletId, expected).changes === 1,
    /**
     * The scheduler's claim of a due slot (one worker wins): next_run_at moves from `expected` to
     * `next`, and `expected` is kept as the pending slot until `savePolled` stores its outcome.
     */
    claimDue: (appletId: string, expected: string, next: string, now: string): boolean =>
      claimDue.run(next, expected, now, appletId, expected).changes === 1,
    /** Stores a poll's outcome for `slot` without touching next_run_at (the scheduler's claim moved it). */
    savePolled: (appletId: string, s: Omit<TriggerState, "nextRunAt">, now: string, slot: string | null = null): boolean => savePolledTx(appletId, s, now, slot),
    /** Claimed slots whose outcome was never stored: the worker that claimed them stopped in between. */
    listPending: (): PendingSlot[] => pending.all(),
    /** Applets whose trigger's last check failed, for the applets list's "needs attention". */
    lastErrors: (): TriggerError[] => lastErrors.all(),
    /** Every polled applet's last error and next check, for the applets list. */
    overview: (): TriggerOverview[] => overview.all(),
    clearPending: (appletId: string, slot: string): void => void clearPending.run(appletId, slot),
    setLastError: (appletId: string, error: string, now: string): void => void setError.run(error, now, appletId),
    /** Polled applets of `types` with a next_run_at; `dueAt`: only those with next_run_at <= it. */
    listScheduled: (opts: { types: readonly string[]; dueAt?: string; enabledOnly?: boolean; limit?: number }): ScheduledApplet[] => {
      const stmt = scheduledStatement(opts.types.length, opts.dueAt !== undefined, opts.enabledOnly ?? false, opts.limit !== undefined);
      const args: unknown[] = [...(opts.dueAt !== undefined ? [opts.dueAt] : []), ...opts.types, ...(opts.limit !== undefined ? [opts.limit] : [])];
      return opts.types.length === 0 ? [] : stmt.all(...args).map((r) => ({ ...r, enabled: r.enabled === 1 }));
    },
    /** Enabled applets of `types` whose next_run_at is null (edited by hand, or never scheduled). */
    listUnscheduled: (types: readonly string[]) => unscheduled.all(JSON.stringify(types)),
  };
}
