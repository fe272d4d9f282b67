import { ScheduleValidationError } from "./errors";

/**
 * What a cron expression may say, checked field by field before croner sees it, so every problem
 * is reported in the user's terms: the field by name, the token as typed, and the range as the
 * user counts it (croner's own messages use zero-based days and months, "Invalid value for day:
 * 31" for a 32, and "illegal stepping: 0" without a field).
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
  names?: readonly string[];
  /** Offset of names[0] (JAN = 1, SUN = 0). */
  nameBase?: number;
  special?: RegExp;
}

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"] as const;
const WEEKDAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] as const;

const FIELDS: readonly FieldSpec[] = [
  { name: "minute", min: 0, max: 59, range: "0–59" },
  { name: "hour", min: 0, max: 23, range: "0–23" },
  // croner's extensions: L (last day), LW (last weekday), 15W (weekday nearest the 15th).
  { name: "day-of-month", min: 1, max: 31, range: "1–31", special: /^(?:L|LW|\d{1,2}W)$/i },
  { name: "month", min: 1, max: 12, range: "1–12 or JAN–DEC", names: MONTHS, nameBase: 1 },
  // 0 and 7 are both Sunday; 5L is the last Friday of the month, 1#2 the second Monday.
  { name: "day-of-week", min: 0, max: 7, range: "0–7 (0 and 7 are Sunday) or SUN–SAT", names: WEEKDAYS, nameBase: 0, special: /^(?:[0-7]L|[0-7]#[1-5]|L)$/i },
];

/**
 * Throws ScheduleValidationError for the first field that is wrong, naming it. `original` is
 * what the user typed (a nickname, or the expression with its spacing), quoted in the message.
 */
export function checkCronFields(expanded: string, original: string = expanded): void {
  const fields = expanded.split(/\s+/);
  const fail = (message: string): never => {
    throw new ScheduleValidationError(`schedules: invalid cron ${JSON.stringify(original)}: ${message}`);
  };
  fields.forEach((field, i) => {
    const spec = FIELDS[i];
    if (spec === undefined) return;
    if (field === "") fail(`${spec.name} is empty`);
    for (const part of field.split(",")) {
      if (part === "") fail(`${spec.name} ${JSON.stringify(field)} has an empty item between commas`);
      checkPart(spec, part, fail);
    }
  });
}

function checkPart(spec: FieldSpec, part: string, fail: (message: string) => never): void {
  const quoted = JSON.stringify(part);
  if (spec.special?.test(part)) {
    const day = /^\d+/.exec(part)?.[0];
    if (day !== undefined) checkValue(spec, day, part, fail);
    return;
  }
  const slash = part.indexOf("/");
  const base = slash === -1 ? part : part.slice(0, slash);
  if (slash !== -1) {
    const step = part.slice(slash + 1);
    if (!/^\d+$/.test(step)) fail(`${spec.name} ${quoted} has step ${JSON.stringify(step)}, which is not a whole number`);
    const n = Number(step);
    if (n < 1) fail(`${spec.name} ${quoted} has step 0; a step is at least 1 (${spec.name} is ${spec.range})`);
  }
  if (base === "*" || (base === "?" && (spec.name === "day-of-month" || spec.name === "day-of-week"))) return;
  const dash = base.indexOf("-", 1);
  if (dash === -1) {
    checkValue(spec, base, part, fail);
    return;
  }
  const from = checkValue(spec, base.slice(0, dash), part, fail);
  const to = checkValue(spec, base.slice(dash + 1), part, fail);
  if (from > to) fail(`${spec.name} range ${quoted} runs backwards; write the smaller value first`);
}

/** The number a value names (JAN → 1, SUN → 0), or a failure that quotes it and the range. */
function checkValue(spec: FieldSpec, value: string, part: string, fail: (message: string) => never): number {
  const where = value === part ? JSON.stringify(value) : `${JSON.stringify(value)} (in ${JSON.stringify(part)})`;
  if (/^\d+$/.test(value)) {
    const n = Number(value);
    if (n < spec.min || n > spec.max) fail(`${spec.name} ${where} is out of range; ${spec.name} is ${spec.range}`);
    return n;
  }
  const index = spec.names?.indexOf(value.toUpperCase()) ?? -1;
  if (index >= 0) return index + (spec.nameBase ?? 0);
  return fail(`${spec.name} ${where} is not a valid value; ${spec.name} is ${spec.range}`);
}
