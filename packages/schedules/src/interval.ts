import { ScheduleValidationError } from "./errors";

const UNIT_MS = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
} as const;

const INTERVAL_PATTERN = /^(\d+)(ms|s|m|h|d|w)$/;

/**
 * "100ms" | "30s" | "5m" | "1h" | "1d" | "1w" → milliseconds. A day is a fixed 24 h and a week
 * 7 × 24 h: an interval is a duration, so it ignores DST. Use `cron` + `timezone` for wall-clock
 * times ("every day at 09:00 in New York").
 */
export function parseInterval(interval: string): number {
  const match = typeof interval === "string" ? INTERVAL_PATTERN.exec(interval) : null;
  if (!match) {
    throw new ScheduleValidationError(
      `schedules: invalid interval ${JSON.stringify(interval)}: expected a positive whole number followed by ms, s, m, h, d or w (e.g. "100ms", "30s", "5m", "1h", "1d", "1w")`,
    );
  }
  const amount = Number(match[1]);
  const ms = amount * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (amount === 0 || !Number.isSafeInteger(ms)) {
    throw new ScheduleValidationError(
      `schedules: invalid interval ${JSON.stringify(interval)}: must be greater than zero and at most ${Number.MAX_SAFE_INTEGER} ms`,
    );
  }
  return ms;
}
