import { expandCron, isValidTimeZone, nextRunAfter, validateTiming, type ScheduleTiming } from "@whenthen/schedules";
import { formatInTimeZone } from "date-fns-tz";
import { z } from "zod";
import { field } from "../plugin";
import type { PolledTrigger } from "./types";

/**
 * The schedule trigger: a 5-field cron expression read in an IANA time zone. The math is
 * @whenthen/schedules' `nextRunAfter` (croner 11, `{ timezone, paused: true, mode: "5-part" }`),
 * so the editor, the save-time `next_run_at` and the scheduler's claim all use one computation.
 *
 * croner 11's DST rule (DESIGN.md, pinned by tests/unit/schedule.test.ts): a time in the
 * spring-forward gap fires at the first valid time after the gap, the same day; a repeated
 * fall-back time fires once, at its first occurrence; a wildcard hour fires in both repeated hours.
 */

/**
 * A cron problem in words, or null: one message naming the field, the token and its range (the
 * package's). 6-field (seconds) and 7-field (years) patterns are refused; the nicknames @hourly,
 * @daily, @weekly, @monthly and @yearly are accepted.
 */
export function cronProblem(cron: string): string | null {
  const trimmed = cron.trim();
  let fields: string[];
  try {
    fields = expandCron(trimmed).split(/\s+/);
  } catch (err) {
    return `schedule: ${(err as Error).message.replace(/^schedules: /, "")}`;
  }
  if (fields.length !== 5) {
    return `schedule: cron "${cron}" has ${fields.length} field${fields.length === 1 ? "" : "s"}; expected 5 (minute hour day-of-month month day-of-week) or a nickname such as @daily, seconds are not supported`;
  }
  try {
    validateTiming({ cron: trimmed });
    return null;
  } catch (err) {
    return `schedule: ${(err as Error).message.replace(/^schedules: /, "")}`;
  }
}

export const scheduleConfigSchema = z.strictObject({
  cron: field(
    z
      .string()
      .trim()
      .min(1, "required")
      .max(200)
      .superRefine((cron, ctx) => {
        const problem = cronProblem(cron);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      }),
    { label: "Cron expression", kind: "cron", required: true, placeholder: "0 9 * * 1-5", help: "Five fields: minute hour day-of-month month day-of-week (0 9 * * 1-5 is 09:00 on weekdays), or @hourly, @daily, @weekly, @monthly, @yearly." },
  ),
  timezone: field(
    z
      .string()
      .trim()
      .min(1, "required: an IANA time zone such as Europe/Berlin")
      .superRefine((tz, ctx) => {
        if (!isValidTimeZone(tz)) ctx.addIssue({ code: "custom", message: `schedule: unknown IANA time zone "${tz}"` });
      }),
    { label: "Time zone", kind: "timezone", required: true, placeholder: "Europe/Berlin", help: "IANA name. Daylight saving: a time skipped by the spring change fires right after the gap; a time repeated in autumn fires once." },
  ),
});
export type ScheduleConfig = z.infer<typeof scheduleConfigSchema>;

/** What decides the fire times; shared with the scheduler's adapter so both compute the same slot. */
export const scheduleTiming = (config: ScheduleConfig): ScheduleTiming => ({ cron: config.cron, timezone: config.timezone });

/** The first fire time strictly after `from`. */
export const nextFireTime = (cron: string, timezone: string, from: Date): Date => nextRunAfter({ cron, timezone }, from);

/** The next `n` fire times strictly after `from`, for the editor's preview and for tests. Pure. */
export function nextFireTimes(cron: string, timezone: string, from: Date, n: number): Date[] {
  const out: Date[] = [];
  let cursor = from;
  for (let i = 0; i < n; i++) {
    cursor = nextFireTime(cron, timezone, cursor);
    out.push(cursor);
  }
  return out;
}

/** The ingredients of one fire at `slot`, every local field formatted by date-fns-tz in `timezone`. */
export function schedulePayload(slot: Date, timezone: string): Record<string, unknown> {
  return {
    fired_at: slot.toISOString(),
    fired_at_local: formatInTimeZone(slot, timezone, "yyyy-MM-dd'T'HH:mm:ssxxx"),
    date: formatInTimeZone(slot, timezone, "yyyy-MM-dd"),
    time: formatInTimeZone(slot, timezone, "HH:mm"),
    weekday: formatInTimeZone(slot, timezone, "EEEE"),
    timezone,
  };
}

export const scheduleTrigger: PolledTrigger<ScheduleConfig, "schedule"> = {
  type: "schedule",
  feed: "polled",
  label: "Schedule",
  description: "Fires on a cron schedule in your time zone (for example every weekday at 09:00).",
  configSchema: scheduleConfigSchema,
  exampleConfig: { cron: "0 9 * * 1-5", timezone: "Europe/Berlin" },
  ingredients: [
    { name: "fired_at", description: "The scheduled time (ISO UTC)" },
    { name: "fired_at_local", description: "The scheduled time with the zone's offset (ISO)" },
    { name: "date", description: "Local date, yyyy-MM-dd" },
    { name: "time", description: "Local time, HH:mm" },
    { name: "weekday", description: "Local day of the week, e.g. Monday" },
    { name: "timezone", description: "The schedule's IANA time zone" },
  ],
  sample: schedulePayload(new Date("2026-03-09T13:00:00.000Z"), "America/New_York"),

  timing: (config) => scheduleTiming(config),
  timingOfInvalid: (raw) => ({ cron: String(raw.cron), timezone: typeof raw.timezone === "string" ? raw.timezone : undefined }),
  // A schedule waits for its first slot, and a slot claimed but never recorded fires on the next
  // tick: its event is keyed by the slot, so it fires once.
  firstRun: "nextSlot",
  refireLostSlot: true,

  // The slot is the next_run_at the scheduler claimed: it is the dedupe key, so a second tick (or
  // a second worker) that reached the same slot inserts nothing.
  poll: async (config, _state, ctx, slot) => ({
    events: [{ dedupeKey: slot.toISOString(), payload: schedulePayload(slot, config.timezone) }],
    state: { lastPolledAt: ctx.clock.now().toISOString(), lastError: null, errorCount: 0 },
  }),
};
