/**
 * What the host uses the schedule for ("signal", "broadcast", "applet", …). The package never
 * interprets it: a reconciler handles the kinds it is told to, so several reconcilers (one per
 * runner) can share one store.
 */
export type ScheduleKind = string;

/**
 * The persisted record. Exactly one of `interval` and `cron` is set; `timezone` only goes with
 * `cron` (an interval is a duration, it has no wall clock). Dates are kept to the millisecond by
 * every store.
 */
export interface Schedule {
  id: string;
  kind: ScheduleKind;
  /** What to run: a signal name, an applet id… Interpreted by the host's `triggerFn`. */
  target: string;
  /** "100ms", "30s", "5m", "1h", "1d", "1w" — see `parseInterval`. */
  interval?: string;
  /** A 5-field cron expression: minute hour day-of-month month day-of-week. */
  cron?: string;
  /** IANA time zone the cron expression is read in; UTC when absent. */
  timezone?: string;
  /** Any JSON value; stores round-trip it through JSON, so `null` comes back as absent. */
  input?: unknown;
  enabled: boolean;
  nextRunAt: Date;
  lastRunAt?: Date;
  /** "triggered" | "errored" | "skipped:overlap" from the reconciler, or anything the host records. */
  lastRunStatus?: string;
  lastRunId?: string;
  createdAt: Date;
  updatedAt: Date;
  createdBy?: string;
}

/**
 * A partial update. A key that is absent (or `undefined`) leaves the field alone; `null` clears an
 * optional field. `updatedAt` defaults to the store's clock. Changing the timing does not move
 * `nextRunAt` by itself: pass `nextRunAt: nextRunAfter(merged, now)` when you want it to.
 */
export interface SchedulePatch {
  kind?: ScheduleKind;
  target?: string;
  interval?: string | null;
  cron?: string | null;
  timezone?: string | null;
  input?: unknown;
  enabled?: boolean;
  nextRunAt?: Date;
  lastRunAt?: Date | null;
  lastRunStatus?: string | null;
  lastRunId?: string | null;
  updatedAt?: Date;
  createdBy?: string | null;
}

export interface ScheduleFilter {
  /** One kind or any of several. */
  kind?: ScheduleKind | readonly ScheduleKind[];
  enabled?: boolean;
  /** Only schedules whose `nextRunAt <= now`. */
  due?: boolean;
  /** The reference time for `due`; the store's clock when absent. */
  now?: Date;
  /** At most this many, in `nextRunAt` order (then id). */
  limit?: number;
}

export interface ScheduleAdapter {
  /** Throws ScheduleConflictError on a duplicate id, ScheduleValidationError on a bad record. */
  add(schedule: Schedule): Promise<void>;
  get(id: string): Promise<Schedule | null>;
  /** Ordered by `nextRunAt`, then id. `due` queries use an index on (enabled, next run). */
  list(filter?: ScheduleFilter): Promise<Schedule[]>;
  /**
   * The stores of this package resolve false when no schedule has that id (true otherwise); an
   * adapter that resolves nothing, as the original interface had it, is taken as done.
   */
  update(id: string, patch: SchedulePatch): Promise<boolean | void>;
  /** Resolves false when no schedule had that id. */
  delete(id: string): Promise<boolean>;
  /**
   * Atomically advance `nextRunAt` only if the schedule is enabled and its stored `nextRunAt` still
   * equals `expectedNextRunAt` (to the millisecond). Resolves true for exactly one caller per slot.
   * Required for multi-instance correctness.
   */
  claimDue?(id: string, expectedNextRunAt: Date, newNextRunAt: Date): Promise<boolean>;
  generateId(): string;
  /** Resolves false (never throws) when the backing store cannot be reached. */
  ping(): Promise<boolean>;
  /** Releases connections the store opened itself; ones the host passed in stay open. */
  close?(): Promise<void>;
}

/** What a host supplies to create a schedule; `buildSchedule` fills in the rest. */
export interface ScheduleInit {
  id?: string;
  kind: ScheduleKind;
  target: string;
  interval?: string;
  cron?: string;
  timezone?: string;
  input?: unknown;
  enabled?: boolean;
  /** First fire; `nextRunAfter(schedule, now)` when absent. */
  nextRunAt?: Date;
  createdBy?: string;
}

/** Compatible with the app's `Clock`: only `now` is used. */
export interface ScheduleClock {
  now(): Date;
}
