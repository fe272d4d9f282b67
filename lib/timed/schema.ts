/**
 * The timing of an action and the applet's timed settings, as the definition holds them
 * (zod, strict: every field refused on save with its path named). Durations are read with
 * @vibedout/automations' parseDuration, and the whole timing is checked once more by its parseRule,
 * so what saves is exactly what the planner accepts.
 */
import { CONDITION_OPS, parseClockTime, parseDuration } from "@vibedout/automations";
import { isValidTimeZone } from "@whenthen/schedules";
import { z } from "zod";

/** "0" (at the anchor) or a library duration: "-24h", "30m", "2d", "1h30m". null when it does not parse. */
export function durationOf(text: string): number | null {
  const t = text.trim();
  if (/^[+-]?0+$/.test(t)) return 0;
  return parseDuration(t);
}

const PATH = /^trigger(\.[A-Za-z0-9_$-]+)+$/;

const offset = z.string().refine((v) => durationOf(v) !== null, {
  message: 'must be an offset such as "-24h" (a day before), "30m", "2d", "1h30m" or "0"',
});
const lateness = z.string().refine((v) => {
  const ms = durationOf(v);
  return ms !== null && ms >= 0;
}, { message: 'must be a duration of zero or more such as "1h", "30m", "2d", or null for never too late' });

export const timingSchema = z.strictObject({
  /** From the anchor: "-24h" a day before, "10m" ten minutes after, "0" at it. */
  at: offset,
  /** "event" (the event's arrival, the default) or a path into the ingredients holding a time. */
  anchor: z
    .string()
    .refine((v) => v === "event" || PATH.test(v), { message: 'must be "event" or a path into the ingredients such as "trigger.body.starts_at"' })
    .optional(),
  /** How late it may still run (default "1h"); null: never too late. */
  lateness: lateness.nullable().optional(),
  /** At send time, skip as `stale` when the anchor moved since planning (default true). */
  guard_anchor: z.boolean().optional(),
});

const template = z.string().min(1, "must not be empty").max(500);
const clock = z.string().refine((v) => parseClockTime(v) !== null, { message: 'must be a 24-hour time "HH:MM"' });
const zone = z.string().refine(isValidTimeZone, "unknown IANA time zone");

/** Where a condition looks: the trigger's ingredients, the contact, or the event (its type, subject). */
export const CONDITION_FIELD = /^(trigger|contact|event)(\.[A-Za-z0-9_$-]+)+$/;

const conditionSchema = z.strictObject({
  field: z.string().regex(CONDITION_FIELD, 'must be a path that starts with trigger., contact. or event., such as "trigger.body.status"'),
  op: z.enum(CONDITION_OPS as unknown as [string, ...string[]], { error: () => `must be one of ${CONDITION_OPS.join(", ")}` }),
  /** For `exists`: true (the default) or false; for `in` / `not_in`: a list. */
  value: z.json().optional(),
  /** Text comparisons without regard to case. */
  ignore_case: z.boolean().optional(),
});
const conditionList = z.array(conditionSchema).max(20, "at most 20 conditions");

export const timedSchema = z.strictObject({
  /**
   * Whether an event plans its timed actions at all, with the library's semantics: every `all`
   * holds and, when `any` is not empty, one of `any` does. An event they reject plans nothing.
   */
  conditions: z.strictObject({ all: conditionList.optional(), any: conditionList.optional() }).optional(),
  /** The record a trigger is about; without it every event is a record of its own. */
  subject: z
    .strictObject({
      id: template,
      /** A number, or a time (ISO with zone, epoch) read as milliseconds. */
      version: template,
      type: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "must be 1-64 letters, digits, '.', '_' or '-'").optional(),
    })
    .optional(),
  supersede: z
    .strictObject({
      path: z.string().regex(PATH, 'must be a path into the ingredients such as "trigger.body.event"'),
      values: z.array(z.string().min(1).max(200)).max(50),
      cancel_values: z.array(z.string().min(1).max(200)).max(50).optional(),
    })
    .optional(),
  contact: z.strictObject({ id: template, timezone: template.optional() }).optional(),
  quiet_hours: z
    .strictObject({
      start: clock,
      end: clock,
      mode: z.enum(["defer", "skip"]).optional(),
      timezone: zone.optional(),
    })
    .refine((q) => parseClockTime(q.start) !== parseClockTime(q.end), { message: "start and end are the same time, so the window is empty", path: ["end"] })
    .optional(),
  frequency_cap: z
    .strictObject({
      max: z.number().int().min(1).max(1000),
      per: z.string().refine((v) => (durationOf(v) ?? 0) > 0, { message: 'must be a duration such as "1d" or "12h"' }),
    })
    .optional(),
});

export type Timing = z.infer<typeof timingSchema>;
export type Timed = z.infer<typeof timedSchema>;
