import { Cron } from "croner";
import { checkCronFields, expandCron, hasWildcardHour } from "./cron";
import { ScheduleValidationError } from "./errors";
import { parseInterval } from "./interval";
import type { Schedule, ScheduleInit } from "./types";
import { firstInstantOfWall, wallOf } from "./zoned";

/** The fields that decide when a schedule fires. */
export type ScheduleTiming = Pick<Schedule, "interval" | "cron" | "timezone"> & {
  /** The current slot; interval schedules stay on its grid (see `nextRunAfter`). */
  nextRunAt?: Date;
};

// Parsing a pattern is most of the cost of a next-run computation, and a store holds few distinct
// (expression, zone) pairs; the cap only bounds memory against hosts that generate expressions.
const CRON_CACHE_LIMIT = 500;
const cronCache = new Map<string, Cron>();

/**
 * Parses (once per expression and zone) and checks the pattern ever fires; throws on a bad one.
 * `expression` is already expanded (`expandCron`); `original` is what the user wrote.
 */
function cronFor(expression: string, timezone: string | undefined, original: string = expression): Cron {
  const key = `${timezone ?? ""}\u0000${expression}`;
  let cron = cronCache.get(key);
  if (!cron) {
    checkCronFields(expression, original);
    try {
      // mode "5-part" makes croner itself refuse seconds/years fields instead of silently accepting them.
      // Without a zone croner would read the pattern in the host's local time; "UTC when absent".
      cron = new Cron(expression, { timezone: timezone ?? "UTC", paused: true, mode: "5-part" });
    } catch (cause) {
      // The field check above catches what users write; this is croner refusing something rarer.
      const reason = (cause instanceof Error ? cause.message : String(cause)).replace(/^CronPattern:\s*/, "");
      throw new ScheduleValidationError(`schedules: invalid cron ${JSON.stringify(original)}: ${reason}`, { cause });
    }
    if (cron.nextRun(new Date(0)) === null) {
      throw new ScheduleValidationError(`schedules: cron ${JSON.stringify(original)} never fires`);
    }
    if (cronCache.size >= CRON_CACHE_LIMIT) cronCache.clear();
    cronCache.set(key, cron);
  }
  return cron;
}

// Building an Intl.DateTimeFormat costs ~0.1 ms and every tick re-validates each due schedule;
// the answers for the few zones in use are kept.
const zoneValidity = new Map<string, boolean>();

/** Whether `timezone` is an IANA zone this runtime knows (cached). */
export function isValidTimeZone(timezone: string): boolean {
  let ok = zoneValidity.get(timezone);
  if (ok === undefined) {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: timezone });
      ok = true;
    } catch {
      ok = false;
    }
    if (zoneValidity.size >= 1000) zoneValidity.clear();
    zoneValidity.set(timezone, ok);
  }
  return ok;
}

function assertTimezone(timezone: string): void {
  if (!isValidTimeZone(timezone)) {
    throw new ScheduleValidationError(`schedules: invalid timezone ${JSON.stringify(timezone)}: expected an IANA name such as "Europe/Berlin"`);
  }
}

/**
 * Throws ScheduleValidationError unless exactly one of `interval` / `cron` is set, the interval
 * parses, the cron expression has 5 fields and ever fires, and the timezone is a known IANA zone.
 */
/** How interval strings are read; the package's `parseInterval` unless a host passes its own. */
export interface TimingOptions {
  parseInterval?: (interval: string) => number;
}

export function validateTiming(timing: ScheduleTiming, options: TimingOptions = {}): void {
  const hasInterval = timing.interval !== undefined && timing.interval !== null;
  const hasCron = timing.cron !== undefined && timing.cron !== null;
  if (hasInterval === hasCron) {
    throw new ScheduleValidationError(
      `schedules: a schedule needs exactly one of interval and cron (got ${hasInterval ? `interval ${JSON.stringify(timing.interval)} and cron ${JSON.stringify(timing.cron)}` : "neither"})`,
    );
  }
  if (hasInterval) {
    if (timing.timezone !== undefined && timing.timezone !== null) {
      throw new ScheduleValidationError(
        `schedules: timezone ${JSON.stringify(timing.timezone)} only applies to cron schedules; interval ${JSON.stringify(timing.interval)} is a duration`,
      );
    }
    intervalMs(timing.interval as string, options);
    return;
  }
  const original = timing.cron as string;
  if (typeof original !== "string") throw new ScheduleValidationError(`schedules: invalid cron ${JSON.stringify(original)}: expected a string`);
  const expression = expandCron(original);
  const fields = expression.split(/\s+/).length;
  if (fields !== 5) {
    // croner also takes a date (a one-off) and 6 or 7 fields (seconds, years); the scheduler ticks
    // every 15 s and a schedule repeats, so neither is a schedule here.
    const reason =
      fields === 1 && /^\d{4}-\d\d-\d\d/.test(expression)
        ? "a date fires once and a schedule repeats; write"
        : `${fields} field${fields === 1 ? "" : "s"}; expected`;
    throw new ScheduleValidationError(
      `schedules: invalid cron ${JSON.stringify(original)}: ${reason} 5 fields (minute hour day-of-month month day-of-week) or a nickname such as @daily; seconds and years are not supported`,
    );
  }
  if (timing.timezone !== undefined && timing.timezone !== null) assertTimezone(timing.timezone);
  cronFor(expression, timing.timezone ?? undefined, original);
}

/** A host's parser must give a positive whole number of milliseconds; anything else is refused. */
function intervalMs(interval: string, options: TimingOptions): number {
  if (!options.parseInterval) return parseInterval(interval);
  let ms: number;
  try {
    ms = options.parseInterval(interval);
  } catch (cause) {
    throw new ScheduleValidationError(`schedules: invalid interval ${JSON.stringify(interval)}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new ScheduleValidationError(`schedules: invalid interval ${JSON.stringify(interval)}: the parser gave ${String(ms)}, not a positive whole number of milliseconds`);
  }
  return ms;
}

/** Bounds the walk past wall times whose instant is not after `from` (a repeated hour has 60). */
const MAX_WALL_STEPS = 10_000;

/**
 * The next instant after `from` at which `expression` fires in `timezone`, by wall-clock time:
 * croner matches the pattern on the floating line (every wall minute once), and each match is
 * placed on real time by `firstInstantOfWall`. So on the spring-forward day every skipped time
 * fires once, at the first valid time after the gap, the same day ("0,30 2 * * *" fires once at
 * 03:00); on the fall-back day a repeated time fires at its first occurrence only. A pattern with
 * a wildcard hour is about elapsed time instead ("every hour at :30"), so croner reads it in the
 * zone directly: it fires in both repeated hours and not in the skipped one.
 */
function nextCronRun(original: string, timezone: string | undefined, from: Date): Date | null {
  const expression = expandCron(original);
  if (timezone === undefined || hasWildcardHour(expression)) return cronFor(expression, timezone).nextRun(from);
  const floating = cronFor(expression, undefined);
  let wall = new Date(wallOf(from.getTime(), timezone));
  for (let i = 0; i < MAX_WALL_STEPS; i++) {
    const match = floating.nextRun(wall);
    if (match === null) return null;
    const instant = firstInstantOfWall(match.getTime(), timezone);
    if (instant > from.getTime()) return new Date(instant);
    wall = match;
  }
  return null;
}

/**
 * The first slot strictly after `from`. Pure: time is a parameter.
 *
 * - cron: the next occurrence in `timezone` (UTC when absent), by croner 11 (pinned). The DST rule:
 *   a time in the spring-forward gap fires at the first valid time after the gap, the same day
 *   (several skipped times fire once); a repeated fall-back time fires once, at its first
 *   occurrence; a wildcard hour fires in both repeated hours (see `nextCronRun`).
 * - interval: the next point after `from` on the grid `nextRunAt + k × interval` (just
 *   `from + interval` when the schedule has no `nextRunAt` yet). After downtime that is one slot
 *   ahead of `from` — one catch-up fire, no backlog — and a late tick does not push every later
 *   fire back by its own lateness.
 */
export function nextRunAfter(schedule: ScheduleTiming, from: Date, options: TimingOptions = {}): Date {
  const fromMs = from.getTime();
  if (Number.isNaN(fromMs)) throw new ScheduleValidationError("schedules: nextRunAfter needs a valid `from` date");
  validateTiming(schedule, options);
  let next: Date | null;
  if (schedule.interval !== undefined && schedule.interval !== null) {
    const step = intervalMs(schedule.interval, options);
    const anchor = schedule.nextRunAt?.getTime();
    next =
      anchor === undefined || Number.isNaN(anchor)
        ? new Date(fromMs + step)
        : new Date(anchor + (Math.floor((fromMs - anchor) / step) + 1) * step);
  } else {
    next = nextCronRun(schedule.cron as string, schedule.timezone ?? undefined, from);
  }
  if (next === null || Number.isNaN(next.getTime())) {
    throw new ScheduleValidationError(
      `schedules: no run after ${from.toISOString()} for ${schedule.cron !== undefined ? `cron ${JSON.stringify(schedule.cron)}` : `interval ${JSON.stringify(schedule.interval)}`}`,
    );
  }
  return next;
}

/** Ids and kinds are keys in every store; MySQL indexes at most 191 utf8mb4 characters of one. */
export const MAX_KEY_LENGTH = 191;
export const withinKeyLength = (value: string): boolean => value.length <= MAX_KEY_LENGTH || [...value].length <= MAX_KEY_LENGTH;

const isValidDate = (value: unknown): value is Date => value instanceof Date && !Number.isNaN(value.getTime());

/** Throws ScheduleValidationError naming the first bad field of a full record. */
export function assertValidSchedule(schedule: Schedule): void {
  const fail = (field: string, message: string): never => {
    throw new ScheduleValidationError(`schedules: schedule ${JSON.stringify(schedule?.id)}: ${field} ${message}`);
  };
  if (typeof schedule !== "object" || schedule === null) throw new ScheduleValidationError("schedules: a schedule must be an object");
  if (typeof schedule.id !== "string" || schedule.id === "") fail("id", "must be a non-empty string");
  if (typeof schedule.kind !== "string" || schedule.kind === "") fail("kind", "must be a non-empty string");
  for (const field of ["id", "kind"] as const) {
    if (!withinKeyLength(schedule[field])) fail(field, `must be at most ${MAX_KEY_LENGTH} characters`);
  }
  if (typeof schedule.target !== "string") fail("target", "must be a string");
  if (typeof schedule.enabled !== "boolean") fail("enabled", "must be a boolean");
  for (const field of ["nextRunAt", "createdAt", "updatedAt"] as const) {
    if (!isValidDate(schedule[field])) fail(field, "must be a valid Date");
  }
  if (schedule.lastRunAt !== undefined && !isValidDate(schedule.lastRunAt)) fail("lastRunAt", "must be a valid Date");
  for (const field of ["lastRunStatus", "lastRunId", "createdBy"] as const) {
    if (schedule[field] !== undefined && typeof schedule[field] !== "string") fail(field, "must be a string");
  }
  validateTiming(schedule);
}

/**
 * A complete record from what a host knows: defaults `enabled: true` and the first `nextRunAt` to
 * the next slot after `now`.
 */
export function buildSchedule(init: ScheduleInit, options: { now: Date; generateId: () => string }): Schedule {
  const timing = { interval: init.interval, cron: init.cron, timezone: init.timezone };
  const schedule: Schedule = {
    id: init.id ?? options.generateId(),
    kind: init.kind,
    target: init.target,
    enabled: init.enabled ?? true,
    nextRunAt: init.nextRunAt ?? nextRunAfter(timing, options.now),
    createdAt: options.now,
    updatedAt: options.now,
  };
  if (init.interval !== undefined) schedule.interval = init.interval;
  if (init.cron !== undefined) schedule.cron = init.cron;
  if (init.timezone !== undefined) schedule.timezone = init.timezone;
  if (init.input !== undefined && init.input !== null) schedule.input = init.input;
  if (init.createdBy !== undefined) schedule.createdBy = init.createdBy;
  assertValidSchedule(schedule);
  return schedule;
}
