import { ScheduleValidationError } from "./errors";

/**
 * What a cron expression may say, checked field by field before croner sees it, so every problem
 * is reported in the user's terms: the field by name, the token as typed, and the range as the
 * user counts it (croner's own messages use zero-based days and months, "Invalid value for day:
 * 31" for a 32, and "illegal stepping: 0" without a field).
 *
 * The grammar is croner 11's, read from its parser and checked against the patterns of croner's
 * own tests (test/cron-grammar.test.ts): whatever croner accepts is accepted here with croner's
 * meaning, except the few readings listed in the README under "What croner reads that whenthen
 * refuses", where croner quietly reads something the user did not write (`1JAN` as November,
 * `5L` in day-of-month as "the 5th and the last day", `MON#` as every Monday).
 */

/**
 * The nicknames of Vixie cron, as the 5-field expressions they stand for. They run through the
 * same matching and DST rule as any expression: `@hourly` has a wildcard hour, so it is elapsed
 * time (it fires in both repeated fall-back hours); the others fire at midnight wall time.
 */
export const CRON_NICKNAMES: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

/** The 5-field expression `expression` stands for: a nickname expanded, anything else trimmed. */
export function expandCron(expression: string): string {
  const s = expression.trim();
  if (!s.startsWith("@")) return s;
  const expanded = CRON_NICKNAMES[s.toLowerCase()];
  if (expanded !== undefined) return expanded;
  const known = Object.keys(CRON_NICKNAMES).join(", ");
  throw new ScheduleValidationError(
    s.toLowerCase() === "@reboot"
      ? `schedules: invalid cron ${JSON.stringify(expression)}: @reboot is not a time; use a schedule such as "0 * * * *" (hourly)`
      : `schedules: invalid cron ${JSON.stringify(expression)}: unknown nickname; use one of ${known}, or 5 fields`,
  );
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  /** The allowed values in words, as the message shows them. */
  range: string;
  /** croner refuses a step larger than the number of values the field has. */
  maxStep: number;
  names?: readonly string[];
  /** Offset of names[0] (JAN = 1, SUN = 0). */
  nameBase?: number;
}

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"] as const;
const WEEKDAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] as const;

const DAY_OF_MONTH: FieldSpec = { name: "day-of-month", min: 1, max: 31, range: "1–31", maxStep: 31 };
const DAY_OF_WEEK: FieldSpec = { name: "day-of-week", min: 0, max: 7, range: "0–7 (0 and 7 are Sunday) or SUN–SAT", maxStep: 7, names: WEEKDAYS, nameBase: 0 };
const FIELDS: readonly FieldSpec[] = [
  { name: "minute", min: 0, max: 59, range: "0–59", maxStep: 60 },
  { name: "hour", min: 0, max: 23, range: "0–23", maxStep: 24 },
  DAY_OF_MONTH,
  { name: "month", min: 1, max: 12, range: "1–12 or JAN–DEC", maxStep: 12, names: MONTHS, nameBase: 1 },
  DAY_OF_WEEK,
];

type Fail = (message: string) => never;

/**
 * Throws ScheduleValidationError for the first field that is wrong, naming it. `original` is
 * what the user typed (a nickname, or the expression with its spacing), quoted in the message.
 */
export function checkCronFields(expanded: string, original: string = expanded): void {
  const fail: Fail = (message) => {
    throw new ScheduleValidationError(`schedules: invalid cron ${JSON.stringify(original)}: ${message}`);
  };
  expanded.split(/\s+/).forEach((field, i) => {
    const spec = FIELDS[i];
    if (spec !== undefined) checkField(spec, field, fail);
  });
}

/**
 * Whether the hour field is a wildcard (`*`, or `?`, which croner reads as `*`): such a pattern is
 * about elapsed time, not wall time, under the DST rule (see `nextCronRun`).
 */
export function hasWildcardHour(expanded: string): boolean {
  const hour = expanded.split(/\s+/)[1];
  return hour === "*" || hour === "?";
}

function checkField(spec: FieldSpec, field: string, fail: Fail): void {
  // LW (the last weekday of the month) is read only as the whole field; croner refuses it in a list.
  if (spec === DAY_OF_MONTH && /^LW$/i.test(field)) return;
  let items = field;
  if (spec === DAY_OF_WEEK && field.startsWith("+")) {
    items = field.slice(1);
    if (items === "") fail(`day-of-week "+" needs weekdays after it ("0 12 13 * +FRI" fires on Friday the 13th only)`);
  }
  for (const part of items.split(",")) {
    if (part === "") fail(`${spec.name} ${JSON.stringify(field)} has an empty item between commas`);
    checkPart(spec, part, fail);
  }
}

function checkPart(spec: FieldSpec, part: string, fail: Fail): void {
  const quoted = `${spec.name} ${JSON.stringify(part)}`;
  if (part.includes("+")) fail(`${quoted}: + goes once, at the start of day-of-week ("0 12 13 * +FRI" fires on Friday the 13th only)`);
  if (spec !== DAY_OF_WEEK && part.includes("#")) fail(`${quoted}: # (the nth weekday, MON#2) belongs in day-of-week`);
  if (spec === DAY_OF_MONTH) {
    if (/^L$/i.test(part)) return;
    const nearest = /^(\d+)W$/i.exec(part);
    if (nearest) {
      checkValue(spec, nearest[1]!, part, fail);
      return;
    }
    if (/LW/i.test(part)) fail(`${quoted}: LW (the last weekday of the month) is the whole day-of-month field; it does not combine with other days`);
    if (/W/i.test(part)) fail(`${quoted}: W goes after a single day (15W is the weekday nearest the 15th), not in a range or a step`);
    // croner would read "5L" as "the 5th and the last day", which nobody means by it.
    if (/L/i.test(part)) fail(`${quoted}: L stands alone in day-of-month (the last day of the month); for a day and the last day write "5,L"`);
  } else {
    if (/^\d+W$/i.test(part)) fail(`${quoted}: W (the weekday nearest a day) belongs in day-of-month, as in 15W`);
    if (spec !== DAY_OF_WEEK && /^\d*L$/i.test(part)) fail(`${quoted}: L belongs in day-of-month (L is the last day) or day-of-week (5L is the last Friday)`);
  }
  const base = spec === DAY_OF_WEEK ? weekdayBase(part, quoted, fail) : part;
  // croner turns every ? into *, so "5?" would quietly be 5.
  if (base.includes("?") && base !== "?" && !base.startsWith("?/")) fail(`${quoted}: ? means any value and stands alone, or before a step ("?/15")`);
  const pieces = base.split("/");
  if (pieces.length > 2) fail(`${quoted} has more than one step`);
  const [range, step] = pieces as [string, string | undefined];
  if (step !== undefined) {
    if (!/^\d+$/.test(step)) fail(`${quoted} has step ${JSON.stringify(step)}, which is not a whole number`);
    const n = Number(step);
    if (n < 1) fail(`${quoted} has step 0; a step is at least 1 (${spec.name} is ${spec.range})`);
    if (n > spec.maxStep) fail(`${quoted} has step ${n}; a step is at most ${spec.maxStep} (${spec.name} is ${spec.range})`);
  }
  if (range === "*" || range === "?") return;
  if (range === "") fail(`${quoted}: a step needs "*" or a range before it ("*/${step}")`);
  const dash = range.indexOf("-", 1);
  if (dash === -1) {
    checkValue(spec, range, part, fail);
    if (step !== undefined) {
      fail(`${quoted}: a step goes after "*" or a range, not a single value ("*/${step}" is every ${step}, "${range}-${spec.max}/${step}" starts at ${range})`);
    }
    return;
  }
  const fromToken = range.slice(0, dash);
  const toToken = range.slice(dash + 1);
  const from = checkValue(spec, fromToken, part, fail);
  const to = checkValue(spec, toToken, part, fail, true);
  if (from > to) fail(`${spec.name} range ${JSON.stringify(part)} runs backwards; write the smaller value first`);
  if (spec === DAY_OF_WEEK && /^SUN$/i.test(fromToken) && /^SUN$/i.test(toToken)) {
    fail(`${quoted} reads as every day (a range ending in SUN ends at 7); write SUN for Sundays or * for every day`);
  }
}

/**
 * A day-of-week item without its nth suffix (`#2`, `#L`, `L`: MON#2 is the second Monday, FRI#L
 * and FRIL the last Friday), which croner allows on any weekday, range or step but not on `*`.
 */
function weekdayBase(part: string, quoted: string, fail: Fail): string {
  const nth = /^(.+?)(#L|L|#\d+)$/i.exec(part);
  if (!nth) {
    if (/^L$/i.test(part)) fail(`${quoted}: L in day-of-week needs a weekday before it (5L or FRI#L is the last Friday); the last day of the month is L in day-of-month`);
    if (part.includes("#")) fail(`${quoted}: # goes between a weekday and which one it is (MON#2 is the second Monday, FRI#L the last Friday)`);
    return part;
  }
  const [, base, suffix] = nth as unknown as [string, string, string];
  if (base === "*" || base === "?") fail(`${quoted}: # and L pick weekdays (MON#2, 1-5L), not "${base}"`);
  if (suffix.startsWith("#") && !/^#L$/i.test(suffix)) {
    const n = Number(suffix.slice(1));
    if (n < 1 || n > 5) fail(`${quoted}: # takes 1–5 or L (MON#2 is the second Monday of the month, FRI#L the last Friday)`);
  }
  return base;
}

/**
 * The number a value names (JAN → 1, SUN → 0, or 7 when it ends a range, as croner reads it), or a
 * failure that quotes it and the range.
 */
function checkValue(spec: FieldSpec, value: string, part: string, fail: Fail, endOfRange = false): number {
  const where = value === part ? JSON.stringify(value) : `${JSON.stringify(value)} (in ${JSON.stringify(part)})`;
  if (value === "") fail(`${spec.name} ${JSON.stringify(part)} needs a value on each side of "-"`);
  if (/^\d+$/.test(value)) {
    const n = Number(value);
    if (n < spec.min || n > spec.max) fail(`${spec.name} ${where} is out of range; ${spec.name} is ${spec.range}`);
    return n;
  }
  const index = spec.names?.indexOf(value.toUpperCase()) ?? -1;
  if (index === 0 && endOfRange && spec === DAY_OF_WEEK) return 7;
  if (index >= 0) return index + (spec.nameBase ?? 0);
  return fail(`${spec.name} ${where} is not a valid value; ${spec.name} is ${spec.range}`);
}
