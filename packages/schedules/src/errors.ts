/**
 * Errors the package throws. Each names the module and the bad value, and carries `cause` when it
 * wraps another error, so a host can map them onto its own classes (user error vs. bug) by type.
 */
export class ScheduleError extends Error {
  override name = "ScheduleError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The schedule (or patch, or interval, or cron expression) is wrong; retrying will not help. */
export class ScheduleValidationError extends ScheduleError {
  override name = "ScheduleValidationError";
}

/** `add` was given an id the store already holds. */
export class ScheduleConflictError extends ScheduleError {
  override name = "ScheduleConflictError";
}

/**
 * What a schedule's `input` reads as when the stored JSON cannot be parsed (the row was edited by
 * hand). Listing still works, so one bad row cannot stop the others; the reconciler disables that
 * schedule. The raw text is kept: writing the schedule back stores it unchanged.
 */
export class UnreadableScheduleInput {
  constructor(
    readonly raw: string,
    readonly message: string,
  ) {}
}
