/** The fire ledger: what became of every fire the app considered. */
/**
 * What became of one fire the app considered (the fire ledger). `fired`, `filtered` and
 * `skipped_overlap` are a run's own rows (read from events and runs); the others are stored.
 */
export const LEDGER_OUTCOMES = ["fired", "late", "skipped_overlap", "dropped_catchup", "missed", "deduplicated", "refused", "filtered", "paused", "disabled", "debounced", "rate_limited"] as const;
export type LedgerOutcome = (typeof LEDGER_OUTCOMES)[number];

export interface LedgerInsert {
  appletId: string;
  /** When the fire was due or arrived (a schedule's slot; a request's arrival; a counted minute's start). */
  at: string;
  outcome: LedgerOutcome;
  /** Why, in a short sentence (cut to 300 characters). */
  detail: string;
  runId?: string | null;
  dedupeKey?: string | null;
  /** Fires this row stands for (a counted minute, or "…and N more" missed slots); default 1. */
  count?: number;
}

export interface LedgerEntry {
  /** A stored row's id, or `run:<run id>` for a run's own row. */
  id: string;
  at: string;
  outcome: LedgerOutcome;
  detail: string;
  runId: string | null;
  /** The run's status when the row is a run's (or names one that still exists). */
  runStatus: string | null;
  dedupeKey: string | null;
  count: number;
}

export interface LedgerPage {
  entries: LedgerEntry[];
  /** Pass as `before` for the next (older) page; null at the end. */
  nextCursor: string | null;
}

/** An applet's expected activity and its quiet state, with the newest event it received. */
export interface ActivityRow {
  appletId: string;
  /** User-set: at least one event every this many hours; null: no expectation of its own. */
  expectEveryHours: number | null;
  /** When the expectation was set (the silence is counted from here when no event came since). */
  expectSince: string | null;
  /** A quiet alert is open since this time (recorded; no recovery yet). */
  quietSince: string | null;
  /** What the quiet alert said. */
  quietDetail: string | null;
  lastEventAt: string | null;
}

/** The fire ledger and expected activity (lib/fires). */
export interface FiresStore {
  /** Stores ledger rows (each its own row); nothing for an empty list. */
  record(rows: LedgerInsert[], now: string): Promise<void>;
  /**
   * Adds `count` to the applet's row for `bucket` (e.g. `refused:2026-12-05T10:04:signature`),
   * creating it: refusals and requests to a disabled applet are counted, never stored one by one.
   */
  count(row: LedgerInsert & { bucket: string; count: number }, now: string): Promise<void>;
  /** Newest first: the stored rows and the runs' own rows together, optionally one outcome, older than `before`. */
  list(appletId: string, opts: { outcome?: LedgerOutcome; before?: string | null; limit: number }): Promise<LedgerPage>;
  /** Stored rows by outcome (sum of counts) updated since `since`, over every applet: /metrics. */
  totals(since: string): Promise<{ outcome: string; count: number }[]>;
  /** Deletes at most `limit` stored rows last updated before `before`; how many. */
  deleteBefore(before: string, limit: number): Promise<number>;
  /** Sets (hours) or clears (null) the applet's own expectation; false: no such applet. */
  setExpectation(appletId: string, hours: number | null, now: string): Promise<boolean>;
  /** Every applet that has an expectation or an open quiet alert, with its newest event's time. */
  activity(): Promise<ActivityRow[]>;
  /** Opens the quiet alert (only when none is open): true for exactly one caller. */
  openQuiet(appletId: string, detail: string, now: string): Promise<boolean>;
  /** Closes an open quiet alert: true for exactly one caller. */
  closeQuiet(appletId: string, now: string): Promise<boolean>;
}
