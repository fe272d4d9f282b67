/**
 * The trigger-state aggregate: the scheduler's slots and the polled triggers' state (./trigger-
 * state.ts is the state itself).
 */
import type { TriggerState } from "./trigger-state";

/** A polled applet with a next_run_at (the scheduler's view, lib/tick/schedule-adapter). */
export interface ScheduledApplet {
  applet_id: string;
  trigger_type: string;
  /** The stored definition JSON text (an unreadable one must not stop the listing). */
  definition: string;
  enabled: boolean;
  /** The stored text, exactly: `claimDue` compares it as stored. */
  next_run_at: string;
  error_count: number;
  created_at: string;
  updated_at: string;
}

export interface PendingSlot {
  applet_id: string;
  trigger_type: string;
  pending_slot: string;
}

/** A polled applet's trigger as the applets list shows it: its last error and when its next check is due. */
export interface TriggerOverview {
  appletId: string;
  lastError: string | null;
  errorCount: number;
  nextRunAt: string | null;
  lastPolledAt: string | null;
}

/** An applet whose trigger's last check failed, with that error (the applets list's "needs attention"). */
export interface TriggerError {
  appletId: string;
  lastError: string;
}

/**
 * Trigger state (table trigger_state): the poller's memory, one row per applet, and the
 * scheduler's slot claims. `next_run_at` is compared as stored text (`IS` semantics: null equals
 * null), so a claim is one conditional UPDATE that exactly one worker wins.
 */
export interface TriggerStateStore {
  /** The state, or null when the applet has no row yet (callers use `emptyTriggerState()`). */
  get(appletId: string): Promise<TriggerState | null>;
  /** Upserts every column including next_run_at. */
  save(appletId: string, s: TriggerState, now: string): Promise<void>;
  /** Upserts next_run_at only (applet save / enable / disable: the one source of next_run_at). */
  setNextRunAt(appletId: string, nextRunAt: string | null, now: string): Promise<void>;
  /**
   * Moves next_run_at from `expected` (null matches null) to `next` in one conditional UPDATE;
   * false when it no longer holds `expected` (another worker or a save got there first).
   */
  claimSlot(appletId: string, expected: string | null, next: string, now: string): Promise<boolean>;
  /**
   * The scheduler's claim of a due slot (one worker wins): next_run_at moves from `expected` to
   * `next`, and `expected` is kept as pending_slot until `savePolled` stores its outcome.
   * false when next_run_at is no longer `expected`.
   */
  claimDue(appletId: string, expected: string, next: string, now: string): Promise<boolean>;
  /**
   * Stores a poll's outcome without touching next_run_at (the claim moved it). pending_slot is
   * cleared only when it is still `slot` (a later claim keeps its own). false: no row.
   */
  savePolled(appletId: string, s: Omit<TriggerState, "nextRunAt">, now: string, slot?: string | null): Promise<boolean>;
  // In the same transaction, the alert the store's alert policy `onPolled` decides (the error
  // count crossing the threshold, or back to 0 after it) is recorded.
  /** Claimed slots whose outcome was never stored (their worker stopped in between), with the applet's trigger type. */
  listPending(): Promise<PendingSlot[]>;
  /** Clears pending_slot only if it is still `slot`. */
  clearPending(appletId: string, slot: string): Promise<void>;
  setLastError(appletId: string, error: string, now: string): Promise<void>;
  /** Every applet whose state holds a last_error (its trigger's last check failed), ordered by applet id; [] when none. */
  lastErrors(): Promise<TriggerError[]>;
  /**
   * Every state row with a last_error or a next_run_at (the polled applets), ordered by applet id, in
   * one read: the applets list's trigger error marks and overdue checks.
   */
  overview(): Promise<TriggerOverview[]>;
  /**
   * Applets of `types` (joined with their state) that have a next_run_at, ordered by next_run_at
   * then applet id; `dueAt`: only next_run_at <= dueAt; `enabledOnly`; `limit`. An index seek on
   * next_run_at: cost proportional to the due rows, not the stored ones. [] when `types` is empty.
   */
  listScheduled(opts: { types: readonly string[]; dueAt?: string; enabledOnly?: boolean; limit?: number }): Promise<ScheduledApplet[]>;
  /** Enabled applets of `types` with a state row whose next_run_at is null. */
  listUnscheduled(types: readonly string[]): Promise<{ applet_id: string; trigger_type: string; definition: string }[]>;
}
