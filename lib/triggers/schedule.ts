import { isValidTimeZone, nextRunAfter, validateTiming, type ScheduleTiming } from "@whenthen/schedules";
import { formatInTimeZone } from "date-fns-tz";
import { z } from "zod";
import { field } from "../plugin";
import { formatAge } from "../core/overdue";
import type { LedgerNote, PolledTrigger } from "./types";

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
 * package's, which reads cron as croner 11 does). 6-field (seconds) and 7-field (years) patterns
 * and one-off dates are refused; the nicknames @hourly, @daily, @weekly, @monthly and @yearly are
 * accepted.
 */
export function cronProblem(cron: string): string | null {
  try {
    validateTiming({ cron: cron.trim() });
    return null;
  } catch (err) {
    return `schedule: ${(err as Error).message.replace(/^schedules: /, "")}`;
  }
}

/**
 * A slot fired later than this after its time was missed (the worker was down or stopped): the
 * tick runs every 15 s and a dead holder's lock lapses after 60 s, so a live worker is never this late.
 */
export const MISSED_AFTER_MS = 2 * 60_000;
export const CATCH_UP_LIMIT_DEFAULT = 10;
export const CATCH_UP_WINDOW_HOURS_DEFAULT = 24;

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
  catch_up: field(z.enum(["skip", "once", "all"]).optional(), {
    label: "After downtime",
    kind: "select",
    options: [
      { value: "once", label: "Fire once for what was missed" },
      { value: "skip", label: "Skip what was missed" },
      { value: "all", label: "Fire every missed time" },
    ],
    help: "When the worker was down at fire times (a fire more than 2 minutes late): fire once (the default), fire nothing until the next time, or fire each missed time once, oldest first, up to a limit within a window.",
  }),
  catch_up_limit: field(z.number().int().min(1).max(100).optional(), {
    label: "At most this many missed fires",
    kind: "number",
    placeholder: String(CATCH_UP_LIMIT_DEFAULT),
    showWhen: { field: "catch_up", equals: ["all"] },
    help: `With "every missed time": the oldest this many (default ${CATCH_UP_LIMIT_DEFAULT}, at most 100).`,
  }),
  catch_up_window_hours: field(z.number().min(1).max(24 * 31).optional(), {
    label: "Only missed times of the last (hours)",
    kind: "number",
    placeholder: String(CATCH_UP_WINDOW_HOURS_DEFAULT),
    showWhen: { field: "catch_up", equals: ["all"] },
    help: `With "every missed time": older ones are dropped (default ${CATCH_UP_WINDOW_HOURS_DEFAULT} h).`,
  }),
  overlap: field(z.enum(["queue", "skip", "buffer_one"]).optional(), {
    label: "If the last run is not done",
    kind: "select",
    options: [
      { value: "queue", label: "Queue this one behind it" },
      { value: "skip", label: "Skip this one" },
      { value: "buffer_one", label: "Queue one, skip the rest" },
    ],
    help: "When a fire comes while the previous run is still waiting or running: queue it (the default), skip it (it shows in the run log as skipped: overlap), or keep at most one waiting.",
  }),
});
export type ScheduleConfig = z.infer<typeof scheduleConfigSchema>;


/** Missed or dropped slots written one row each; past this many, one row says how many more. */
export const LEDGER_SLOT_ROWS = 50;

/**
 * The slots to fire for the claimed `slot` at `now`, oldest first (pure). On time: the slot. Missed:
 * `skip` fires none, `once` the claimed one (the first version's rule), `all` every slot from the
 * claimed one up to now, at most `limit`, none older than `windowHours`. `notes`: what the fire
 * ledger keeps of the slots that did not fire (missed, dropped by the catch-up window or limit),
 * and `late`: how late each fired slot is, for its run's row.
 */
export function slotsToFire(
  config: Pick<ScheduleConfig, "cron" | "timezone" | "catch_up" | "catch_up_limit" | "catch_up_window_hours">,
  slot: Date,
  now: Date,
): { slots: Date[]; missed: number; notes: LedgerNote[]; late: Map<number, LedgerNote> } {
  const late = new Map<number, LedgerNote>();
  if (now.getTime() - slot.getTime() <= MISSED_AFTER_MS) return { slots: [slot], missed: 0, notes: [], late };
  const policy = config.catch_up ?? "once";
  const all: Date[] = [];
  // Counted up to a bound: a minutely cron after a month down is 43,200 slots; past the window and
  // the limit nothing more is needed.
  for (let s = slot; s.getTime() <= now.getTime() && all.length < 10_000; s = nextFireTime(config.cron, config.timezone, s)) all.push(s);
  let slots: Date[];
  const why = new Map<number, { outcome: "missed" | "dropped_catchup"; detail: string }>();
  const down = "the worker was not running at this time";
  if (policy === "skip") {
    slots = [];
    for (const s of all) why.set(s.getTime(), { outcome: "missed", detail: `${down}; “After downtime: skip what was missed” fires none` });
  } else if (policy === "once") {
    slots = [slot];
    for (const s of all.slice(1)) why.set(s.getTime(), { outcome: "missed", detail: `${down}; “After downtime: fire once” fired only the first missed time (${slot.toISOString()})` });
  } else {
    const windowHours = config.catch_up_window_hours ?? CATCH_UP_WINDOW_HOURS_DEFAULT;
    const limit = config.catch_up_limit ?? CATCH_UP_LIMIT_DEFAULT;
    const since = now.getTime() - windowHours * 3_600_000;
    const inWindow = all.filter((s) => s.getTime() >= since);
    slots = inWindow.slice(0, limit);
    for (const s of all) {
      if (s.getTime() < since) why.set(s.getTime(), { outcome: "dropped_catchup", detail: `${down}, and it is older than the catch-up window (${windowHours} h)` });
    }
    for (const s of inWindow.slice(limit)) why.set(s.getTime(), { outcome: "dropped_catchup", detail: `${down}, and the catch-up limit (${limit} missed fires) was reached` });
  }
  for (const s of slots) late.set(s.getTime(), { at: s.toISOString(), outcome: "late", detail: `fired ${formatAge(now.getTime() - s.getTime())} late: ${down}` });
  const notes: LedgerNote[] = [];
  const unfired = all.filter((s) => why.has(s.getTime()));
  for (const s of unfired.slice(0, LEDGER_SLOT_ROWS)) notes.push({ at: s.toISOString(), ...why.get(s.getTime())! });
  const rest = unfired.slice(LEDGER_SLOT_ROWS);
  if (rest.length) {
    const first = rest[0]!;
    const lastOne = rest[rest.length - 1]!;
    notes.push({ at: first.toISOString(), outcome: why.get(first.getTime())!.outcome, detail: `…and ${rest.length} more times up to ${lastOne.toISOString()}: ${why.get(first.getTime())!.detail}`, count: rest.length });
  }
  return { slots, missed: all.length, notes, late };
}

/** Slots counted one by one while an applet was disabled (each ~0.25 ms of cron math, in the request that enables it); past this many, the row says "more than". */
export const DISABLED_SLOTS_COUNTED = 1_000;

/**
 * The fire ledger's row for the slots of a schedule that passed while its applet was disabled
 * (from `disabledAt`, exclusive, to `now`), or null when none did. Pure. One row per disabled
 * stretch, not one per slot: a minutely schedule disabled for a month is one row saying how many
 * times passed, from when to when (counted up to DISABLED_SLOTS_COUNTED). Enabling never fires
 * them: the schedule waits for its next time, as a schedule saved new does.
 */
export function disabledSlotsNote(
  config: Pick<ScheduleConfig, "cron" | "timezone">,
  disabledAt: Date,
  now: Date,
  pausedReason: string | null,
): (Omit<LedgerNote, "outcome"> & { outcome: "disabled" | "paused"; count: number }) | null {
  let first: Date | null = null;
  let last: Date | null = null;
  let count = 0;
  for (let s = nextFireTime(config.cron, config.timezone, disabledAt); s.getTime() <= now.getTime(); s = nextFireTime(config.cron, config.timezone, s)) {
    first ??= s;
    last = s;
    if (++count >= DISABLED_SLOTS_COUNTED) break;
  }
  if (!first || !last) return null;
  const capped = count >= DISABLED_SLOTS_COUNTED && nextFireTime(config.cron, config.timezone, last).getTime() <= now.getTime();
  const times = count === 1 ? `the time ${first.toISOString()}` : `${capped ? `more than ${count.toLocaleString("en")}` : count} times from ${first.toISOString()} to ${capped ? now.toISOString() : last.toISOString()}`;
  const state = pausedReason ? `paused (${pausedReason})` : "disabled";
  return {
    at: first.toISOString(),
    outcome: pausedReason ? "paused" : "disabled",
    detail: `${times} passed while the applet was ${state}; enabled at ${now.toISOString()}, it fires none of them and waits for its next time`,
    count,
  };
}

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

/**
 * The ingredients of one fire at `slot`, every local field formatted by date-fns-tz in `timezone`;
 * `late_by_seconds` is how long after its slot it fired (`firedAt` − slot).
 */
export function schedulePayload(slot: Date, timezone: string, firedAt: Date = slot): Record<string, unknown> {
  return {
    fired_at: slot.toISOString(),
    late_by_seconds: Math.max(0, Math.round((firedAt.getTime() - slot.getTime()) / 1000)),
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
    { name: "late_by_seconds", description: "How long after its scheduled time this fire happened (s)" },
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
  // After downtime the catch-up policy decides which missed slots fire (each keyed by its slot, so
  // each fires once); the overlap policy goes to the tick, which knows the applet's runs.
  poll: async (config, _state, ctx, slot) => {
    const now = ctx.clock.now();
    const { slots, missed, notes, late } = slotsToFire(config, slot, now);
    if (missed > slots.length) ctx.log.info("schedule: missed fire times after downtime", { missed, firing: slots.length, catch_up: config.catch_up ?? "once" });
    return {
      events: slots.map((s) => ({ dedupeKey: s.toISOString(), payload: schedulePayload(s, config.timezone, now), note: late.get(s.getTime()) })),
      notes,
      overlap: config.overlap ?? "queue",
      state: { lastPolledAt: now.toISOString(), lastError: null, errorCount: 0 },
    };
  },
};
