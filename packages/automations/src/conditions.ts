import { RE2JS } from "re2js";
import type { Condition, ConditionOp, Conditions, Contact, RuleEvent } from "./types";

/**
 * Conditions without code: `{ field, op, value, ignore_case? }` under `all` / `any`, read by one
 * evaluator that answers both whether a condition holds and why, in a sentence for a run log.
 *
 * How values compare (the same for every operator that compares):
 * - **Numbers** as numbers, and text that is a plain decimal number ("120", "-3.5", "1e3") counts
 *   as that number when the other side is a number, or when both sides are such text and the
 *   operator orders (gt, gte, lt, lte). `eq` between two texts compares the text ("007" ≠ "7").
 * - **Dates** (ISO 8601 text, a JavaScript Date): two dates with a zone ("…Z", "…+02:00") compare
 *   as instants; two dates without one compare as wall-clock times; a date with a zone and one
 *   without are not comparable, and the condition is false (ne and not_in too) with that reason
 *   (for in / not_in: when no element of the list equals the value and one could not be compared).
 *   A number against a date with a zone is read as epoch milliseconds.
 * - **Text** as text, by UTF-16 code unit; `ignore_case: true` lower-cases both sides first (and
 *   makes `matches` case-insensitive).
 * - Lists and objects are equal when their JSON is; `contains` on a list looks for an equal element,
 *   and `in` / `not_in` on a list field ask whether any element is in the list.
 *
 * **A missing field** (a path that leads nowhere, or to `undefined`) passes `exists: false`,
 * `is_empty`, `ne`, `not_contains` and `not_in`, and fails every other operator. `null` is not
 * missing: it exists, is empty, and equals only `null`.
 *
 * `matches` runs RE2 (re2js): linear time in the text, whatever the pattern, so no pattern can
 * stall a worker; what RE2 does not support (backreferences, lookaround) is refused.
 */

/** What a condition path reads: `payload.…`, `contact.…` (the contact's fields, id, timezone) and `event.…`. */
export interface ConditionScope {
  payload: Record<string, unknown>;
  contact: Record<string, unknown>;
  event: Record<string, unknown>;
}

/** The library's scope, or any object of your own whose keys are the roots of the fields. */
export type AnyConditionScope = ConditionScope | Readonly<Record<string, unknown>>;

export const CONDITION_ROOTS = ["payload", "contact", "event"] as const;

export function conditionScope(event: RuleEvent, contact?: Contact | null): ConditionScope {
  return {
    payload: event.payload ?? {},
    contact: contact ? { ...contact.fields, id: contact.id, ...(contact.timezone ? { timezone: contact.timezone } : {}) } : {},
    event: {
      id: event.id,
      type: event.type,
      occurredAt: event.occurredAt,
      subject: event.subject,
      contactId: event.contactId ?? null,
    },
  };
}

/** What `resolvePath` gives for a path that leads nowhere. */
export const MISSING: unique symbol = Symbol("missing");
export type Missing = typeof MISSING;

function own(value: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(value, key);
}

/**
 * Follows a dotted path ("a.b.0.c"; list elements by index) through own properties only, so
 * `constructor` or a text's `length` are not fields. Undefined counts as missing.
 */
export function resolvePath(obj: unknown, path: string | readonly string[]): unknown {
  let current: unknown = obj;
  for (const key of typeof path === "string" ? path.split(".") : path) {
    if (current === null || typeof current !== "object" || !own(current, key)) return MISSING;
    current = (current as Record<string, unknown>)[key];
  }
  return current === undefined ? MISSING : current;
}

// ---------------------------------------------------------------------------------------------
// Patterns

/** A `matches` pattern is at most this many characters. */
export const PATTERN_MAX_LENGTH = 1000;
const PATTERN_CACHE_SIZE = 500;
const patterns = new Map<string, RE2JS | string>();

function compilePattern(pattern: string, ignoreCase: boolean): RE2JS | string {
  const key = `${ignoreCase ? "i" : "-"}${pattern}`;
  const cached = patterns.get(key);
  if (cached !== undefined) return cached;
  let out: RE2JS | string;
  if (pattern.length > PATTERN_MAX_LENGTH) {
    out = `a pattern is at most ${PATTERN_MAX_LENGTH.toLocaleString("en")} characters; this one has ${pattern.length.toLocaleString("en")}`;
  } else {
    try {
      out = RE2JS.compile(pattern, ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
    } catch (error) {
      out = patternMessage(pattern, error instanceof Error ? error.message : String(error));
    }
  }
  if (patterns.size >= PATTERN_CACHE_SIZE) patterns.delete(patterns.keys().next().value as string);
  patterns.set(key, out);
  return out;
}

function patternMessage(pattern: string, raw: string): string {
  if (/\\[1-9]|\\k[<{']/.test(pattern)) return "backreferences (\\1, \\k<name>) are not supported: patterns are RE2, which matches in linear time";
  if (/\(\?<?[=!]/.test(pattern)) return "lookahead and lookbehind ((?=…), (?!…), (?<=…), (?<!…)) are not supported: patterns are RE2, which matches in linear time";
  const reason = raw.replace(/^error parsing regexp:\s*/, "");
  return `not a valid pattern: ${reason}`;
}

/**
 * Why a `matches` pattern cannot be used, in the user's words, or null when it can. Patterns are
 * RE2 syntax: no backreferences, no lookaround, repeat counts up to 1000.
 */
export function patternProblem(pattern: unknown): string | null {
  if (typeof pattern !== "string") return "a pattern is text";
  const compiled = compilePattern(pattern, false);
  return typeof compiled === "string" ? compiled : null;
}

// ---------------------------------------------------------------------------------------------
// Values

const NUMERIC_TEXT = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?\s*$/i;
const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** A number, or text that is one; null otherwise. */
function numeric(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "string" && NUMERIC_TEXT.test(value)) {
    const n = Number(value);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

interface DateValue {
  ms: number;
  zoned: boolean;
}

/** ISO 8601 text (zoned or not) or a Date, as milliseconds; null when it is not a real date. */
function asDate(value: unknown): DateValue | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : { ms: value.getTime(), zoned: true };
  if (typeof value !== "string") return null;
  const m = DATE_TEXT.exec(value);
  if (!m) return null;
  const [, y, mo, d, h = "0", mi = "0", s = "0", frac = "", zone] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const wall = Date.UTC(year, month - 1, day, Number(h), Number(mi), Number(s), Number(frac.padEnd(3, "0").slice(0, 3)));
  const check = new Date(wall);
  // "2026-02-30" or "25:00" are not dates.
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  if (!zone) return { ms: wall, zoned: false };
  if (zone.toUpperCase() === "Z") return { ms: wall, zoned: true };
  const sign = zone.startsWith("-") ? -1 : 1;
  const digits = zone.slice(1).replace(":", "");
  const offset = (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || "0")) * 60_000;
  return { ms: wall - sign * offset, zoned: true };
}

/** How two values line up: a number to order by, or why they cannot be compared. */
type Comparison = { cmp: number } | { problem: string };

function sign(a: number | string, b: number | string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function fold(text: string, ignoreCase: boolean): string {
  return ignoreCase ? text.toLowerCase() : text;
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (value instanceof Date) return "a date";
  if (typeof value === "string") return asDate(value) ? "a date" : "text";
  if (typeof value === "number") return "a number";
  if (typeof value === "boolean") return "true or false";
  if (typeof value === "object") return "an object";
  return typeof value;
}

/** Orders `a` against `b` as numbers, dates or text, in that order of preference. */
function compare(a: unknown, b: unknown, ignoreCase: boolean, ordering: boolean): Comparison {
  const na = numeric(a);
  const nb = numeric(b);
  if (na !== null && nb !== null && (typeof a === "number" || typeof b === "number" || ordering)) return { cmp: sign(na, nb) };
  const da = asDate(a);
  const db = asDate(b);
  if (da && db) {
    if (da.zoned !== db.zoned) return { problem: "one date has a time zone and the other does not" };
    return { cmp: sign(da.ms, db.ms) };
  }
  if (da?.zoned && typeof b === "number" && Number.isFinite(b)) return { cmp: sign(da.ms, b) };
  if (db?.zoned && typeof a === "number" && Number.isFinite(a)) return { cmp: sign(a, db.ms) };
  if (typeof a === "string" && typeof b === "string") return { cmp: sign(fold(a, ignoreCase), fold(b, ignoreCase)) };
  return { problem: `${kind(a)} cannot be compared with ${kind(b)}` };
}

function json(value: unknown): string | null {
  try {
    return JSON.stringify(value) ?? null;
  } catch {
    // A circular or BigInt-holding value is not equal to anything a rule can write.
    return null;
  }
}

/** Equality as `eq` sees it: compare() for numbers, dates and text, JSON for lists and objects. */
function same(a: unknown, b: unknown, ignoreCase: boolean): Comparison {
  if (a === b) return { cmp: 0 };
  if (a === null || b === null || typeof a === "boolean" || typeof b === "boolean") return { cmp: 1 };
  if (typeof a === "object" && typeof b === "object" && !(a instanceof Date) && !(b instanceof Date)) {
    const ja = json(a);
    return { cmp: ja !== null && ja === json(b) ? 0 : 1 };
  }
  const c = compare(a, b, ignoreCase, false);
  // Values of two kinds (text and a list) are simply different; only two dates can be incomparable.
  return "problem" in c && !c.problem.startsWith("one date") ? { cmp: 1 } : c;
}

function equal(a: unknown, b: unknown, ignoreCase: boolean): boolean {
  const c = same(a, b, ignoreCase);
  return "cmp" in c && c.cmp === 0;
}

/**
 * Whether `found` (or, for a list field, any of its elements) equals an element of `list`; when
 * none does and some element could not be compared (a date with a zone and one without), why.
 */
function inList(found: unknown, list: unknown, ignoreCase: boolean): { hit: boolean; problem?: string } {
  if (!Array.isArray(list)) return { hit: false };
  let problem: string | undefined;
  const one = (item: unknown) =>
    list.some((candidate) => {
      const c = same(item, candidate, ignoreCase);
      if ("problem" in c) problem ??= `${showValue(item)} and ${showValue(candidate)} cannot be compared: ${c.problem}`;
      return "cmp" in c && c.cmp === 0;
    });
  const hit = Array.isArray(found) ? found.some(one) : one(found);
  return hit || problem === undefined ? { hit } : { hit, problem };
}

function isEmpty(value: unknown): boolean {
  if (value === MISSING || value === null || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object" && !(value instanceof Date)) return Object.keys(value).length === 0;
  return false;
}

/**
 * A value as the run log quotes it: JSON, cut to `max` characters. Reads no more of a large list,
 * object or text than it shows, and never throws (circular values, BigInt).
 */
export function showValue(value: unknown, max = 80): string {
  if (value === MISSING) return "(missing)";
  const parts: string[] = [];
  let length = 0;
  const push = (text: string) => {
    parts.push(text);
    length += text.length;
  };
  const walk = (x: unknown, depth: number): void => {
    if (length > max) return;
    if (x instanceof Date) return push(Number.isNaN(x.getTime()) ? "(invalid date)" : JSON.stringify(x.toISOString()));
    if (typeof x === "string") return push(JSON.stringify(x.length > max ? x.slice(0, max) : x));
    if (typeof x === "bigint") return push(`${x}n`);
    if (typeof x === "number") return push(Number.isFinite(x) ? String(x) : "null");
    if (typeof x === "boolean") return push(x ? "true" : "false");
    if (typeof x === "symbol") return push(x.toString());
    if (typeof x === "function") return push("(a function)");
    if (x === null || x === undefined) return push("null");
    if (depth >= 5) return push(Array.isArray(x) ? "[…]" : "{…}");
    if (Array.isArray(x)) {
      push("[");
      for (let i = 0; i < x.length && length <= max; i++) {
        if (i > 0) push(",");
        walk(x[i], depth + 1);
      }
      return push("]");
    }
    push("{");
    let first = true;
    for (const key in x) {
      if (!own(x, key)) continue;
      if (length > max) break;
      if (!first) push(",");
      first = false;
      push(`${JSON.stringify(key)}:`);
      walk((x as Record<string, unknown>)[key], depth + 1);
    }
    push("}");
  };
  walk(value, 0);
  const text = parts.join("");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

// ---------------------------------------------------------------------------------------------
// The evaluator

export interface ConditionVerdict {
  holds: boolean;
  /** A short sentence for the run log: "amount 120 > 100", "status is missing". */
  why: string;
}

/** An operator's sentence when it holds and when it does not. */
const PHRASE: Record<ConditionOp, [string, string]> = {
  eq: ["=", "≠"],
  ne: ["≠", "="],
  gt: [">", "≤"],
  gte: ["≥", "<"],
  lt: ["<", "≥"],
  lte: ["≤", ">"],
  contains: ["contains", "does not contain"],
  not_contains: ["does not contain", "contains"],
  starts_with: ["starts with", "does not start with"],
  ends_with: ["ends with", "does not end with"],
  matches: ["matches", "does not match"],
  in: ["is one of", "is not one of"],
  not_in: ["is not one of", "is one of"],
  exists: ["exists", "is missing"],
  is_empty: ["is empty", "is not empty"],
};

/** The operators that hold on a missing field. */
const HOLD_WHEN_MISSING: ReadonlySet<ConditionOp> = new Set<ConditionOp>(["ne", "not_contains", "not_in", "is_empty"]);
const TEXT_OPS: ReadonlySet<ConditionOp> = new Set<ConditionOp>(["eq", "ne", "gt", "gte", "lt", "lte", "contains", "not_contains", "starts_with", "ends_with", "matches", "in", "not_in"]);

/** One condition against a value already found (MISSING or not). The single evaluator. */
function decide(condition: Condition, found: unknown): ConditionVerdict {
  const { field, op } = condition;
  const value = condition.value;
  const ignoreCase = condition.ignore_case === true && TEXT_OPS.has(op);
  const nocase = ignoreCase ? " (ignoring case)" : "";
  const missing = found === MISSING;
  const phrase = PHRASE[op];
  if (!phrase) return { holds: false, why: `${field}: unknown operator ${showValue(op)}` };
  const say = (holds: boolean, subject = `${field} ${showValue(found)}`, object = ` ${showValue(value)}`): ConditionVerdict => ({
    holds,
    why: `${subject} ${phrase[holds ? 0 : 1]}${object}${nocase}`,
  });

  if (op === "exists") {
    const want = value !== false;
    return { holds: want ? !missing : missing, why: `${field} ${missing ? "is missing" : "exists"}` };
  }
  if (op === "is_empty") {
    const empty = isEmpty(found);
    const holds = value === false ? !empty : empty;
    return { holds, why: missing ? `${field} is missing` : `${field} ${showValue(found)} ${empty ? "is empty" : "is not empty"}` };
  }
  if (missing) return { holds: HOLD_WHEN_MISSING.has(op), why: `${field} is missing` };

  switch (op) {
    case "eq":
    case "ne": {
      const c = same(found, value, ignoreCase);
      if ("problem" in c) return { holds: false, why: `${field} ${showValue(found)} and ${showValue(value)} cannot be compared: ${c.problem}` };
      return say(op === "eq" ? c.cmp === 0 : c.cmp !== 0);
    }
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      const c = compare(found, value, ignoreCase, true);
      if ("problem" in c) return { holds: false, why: `${field} ${showValue(found)} and ${showValue(value)} cannot be compared: ${c.problem}` };
      const holds = op === "gt" ? c.cmp > 0 : op === "gte" ? c.cmp >= 0 : op === "lt" ? c.cmp < 0 : c.cmp <= 0;
      return say(holds);
    }
    case "in":
    case "not_in": {
      const { hit, problem } = inList(found, value, ignoreCase);
      if (problem !== undefined) return { holds: false, why: `${field} ${problem}` };
      if (Array.isArray(found)) {
        const holds = op === "in" ? hit : !hit;
        return { holds, why: `${field} ${showValue(found)} has ${hit ? "one of" : "none of"} ${showValue(value)}${nocase}` };
      }
      return say(op === "in" ? hit : !hit);
    }
    case "contains":
    case "not_contains": {
      let hit: boolean;
      // A number looked for in text is looked for as its digits ("order 1204" contains 120).
      const needle = typeof value === "number" && Number.isFinite(value) ? String(value) : value;
      if (typeof found === "string") hit = typeof needle === "string" && fold(found, ignoreCase).includes(fold(needle, ignoreCase));
      else if (Array.isArray(found)) hit = found.some((item) => equal(item, value, ignoreCase));
      else {
        // Only text and lists contain anything; a number, an object or null contains nothing.
        return { holds: op === "not_contains", why: `${field} ${showValue(found)} is ${kind(found)}, not text or a list` };
      }
      return say(op === "contains" ? hit : !hit);
    }
    case "starts_with":
    case "ends_with": {
      if (typeof found !== "string" || typeof value !== "string") return { holds: false, why: `${field} ${showValue(found)} is ${kind(found)}, not text` };
      const [a, b] = [fold(found, ignoreCase), fold(value, ignoreCase)];
      return say(op === "starts_with" ? a.startsWith(b) : a.endsWith(b));
    }
    case "matches": {
      if (typeof value !== "string") return { holds: false, why: `${field}: a pattern is text, got ${showValue(value)}` };
      const re = compilePattern(value, ignoreCase);
      if (typeof re === "string") return { holds: false, why: `${field}: pattern ${showValue(value)}: ${re}` };
      if (typeof found !== "string") return { holds: false, why: `${field} ${showValue(found)} is ${kind(found)}, not text` };
      const holds = re.test(found);
      return { holds, why: `${field} ${showValue(found)} ${phrase[holds ? 0 : 1]} /${value}/${ignoreCase ? "i" : ""}` };
    }
    default:
      return { holds: false, why: `${field}: unknown operator ${showValue(op)}` };
  }
}

/** One condition against the scope, with the reason. */
export function explainCondition(condition: Condition, scope: AnyConditionScope): ConditionVerdict {
  return decide(condition, resolvePath(scope, condition.field));
}

/** One condition against the scope. See the module comment for types and missing fields. */
export function evaluateCondition(condition: Condition, scope: AnyConditionScope): boolean {
  return explainCondition(condition, scope).holds;
}

/**
 * Every `all` holds and, when `any` has entries, at least one of them holds. `why` names the
 * deciding conditions: the first `all` that fails; else every `all` and the first `any` that
 * holds, joined with "and"; or, when no `any` holds, every `any`. No conditions: "no conditions".
 */
export function explainConditions(conditions: Conditions | undefined | null, scope: AnyConditionScope): ConditionVerdict {
  const all = conditions?.all ?? [];
  const any = conditions?.any ?? [];
  if (all.length === 0 && any.length === 0) return { holds: true, why: "no conditions" };
  const reasons: string[] = [];
  for (const c of all) {
    const v = explainCondition(c, scope);
    if (!v.holds) return v;
    reasons.push(v.why);
  }
  if (any.length > 0) {
    const failed: string[] = [];
    for (const c of any) {
      const v = explainCondition(c, scope);
      if (v.holds) return { holds: true, why: [...reasons, v.why].join(" and ") };
      failed.push(v.why);
    }
    return { holds: false, why: failed.join(" and ") };
  }
  return { holds: true, why: reasons.join(" and ") };
}

/** Every `all` holds and, when `any` has entries, at least one of them holds. */
export function evaluateConditions(conditions: Conditions | undefined | null, scope: AnyConditionScope): boolean {
  if (!conditions) return true;
  for (const c of conditions.all ?? []) if (!evaluateCondition(c, scope)) return false;
  const any = conditions.any ?? [];
  return any.length === 0 || any.some((c) => evaluateCondition(c, scope));
}
