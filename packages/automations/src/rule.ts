import { CONDITION_ROOTS, patternProblem } from "./conditions";
import { parseDuration } from "./duration";
import { isValidTimeZone, parseClockTime } from "./time";
import type { Condition, ConditionOp, Conditions, ParseRuleResult, QuietHours, Rule, RuleProblem, RuleProblemCode, RuleStep } from "./types";

export const CONDITION_OPS: readonly ConditionOp[] = [
  "eq",
  "ne",
  "gt",
  "gte",
  "lt",
  "lte",
  "in",
  "not_in",
  "contains",
  "not_contains",
  "starts_with",
  "ends_with",
  "matches",
  "exists",
  "is_empty",
];
export const DEFAULT_LATENESS = "1h";
export const DEFAULT_TIMEZONE = "America/Mexico_City";

const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const PATH_SEGMENT = /^[A-Za-z0-9_$-]+$/;

const RULE_KEYS = ["id", "enabled", "version", "name", "trigger", "conditions", "steps", "quietHours", "frequencyCap", "timezone"];
const STEP_KEYS = ["id", "action", "offset", "anchor", "params", "lateness"];

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

class Problems {
  readonly list: RuleProblem[] = [];
  add(path: string, code: RuleProblemCode, message: string): void {
    this.list.push({ path, code, message });
  }
  unknownKeys(value: Obj, allowed: readonly string[], path: string): void {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) this.add(join(path, key), "unknown_key", `unknown key "${key}"`);
    }
  }
}

/** A value quoted for a message; never throws (BigInt and circular values defeat JSON.stringify). */
function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value === "bigint" ? `${value}n` : Object.prototype.toString.call(value);
  }
}

function join(path: string, key: string | number): string {
  return path === "" ? String(key) : `${path}.${key}`;
}

function isPath(value: string, roots: readonly string[] | null): boolean {
  const parts = value.split(".");
  if (parts.some((p) => !PATH_SEGMENT.test(p))) return false;
  return roots === null || (parts.length >= 2 && roots.includes(parts[0] ?? ""));
}

function checkDuration(value: unknown, path: string, p: Problems, opts: { min?: number; label: string }): void {
  const ms = parseDuration(value as never);
  if (ms === null) {
    p.add(path, "invalid_duration", `${opts.label} must be milliseconds or text such as "2h", "-24h", "30m"; got ${show(value)}`);
  } else if (opts.min !== undefined && ms < opts.min) {
    p.add(path, "negative_duration", `${opts.label} must be ${opts.min === 0 ? "zero or more" : "more than zero"}; got ${show(value)}`);
  }
}

function checkZone(value: unknown, path: string, p: Problems): void {
  if (!isValidTimeZone(value)) p.add(path, "invalid_timezone", `not an IANA time zone: ${show(value)}`);
}

function readCondition(value: unknown, path: string, p: Problems, roots: readonly string[] | null): Condition | null {
  if (!isObject(value)) {
    p.add(path, "invalid_type", "a condition is an object { field, op, value, ignore_case? }");
    return null;
  }
  p.unknownKeys(value, ["field", "op", "value", "ignore_case"], path);
  const { field, op } = value;
  let ok = true;
  if (field === undefined) {
    p.add(join(path, "field"), "required", "field is required");
    ok = false;
  } else if (typeof field !== "string" || !isPath(field, roots)) {
    const where = roots === null ? "a dotted path such as trigger.body.amount" : `a path starting with ${roots.map((r) => `${r}.`).join(", ").replace(/, ([^,]*)$/, " or $1")}`;
    p.add(join(path, "field"), "invalid_path", `field must be ${where}; got ${show(field)}`);
    ok = false;
  }
  if (op === undefined) {
    p.add(join(path, "op"), "required", "op is required");
    return null;
  }
  if (typeof op !== "string" || !CONDITION_OPS.includes(op as ConditionOp)) {
    p.add(join(path, "op"), "unknown_op", `op must be one of ${CONDITION_OPS.join(", ")}; got ${show(op)}`);
    return null;
  }
  const has = Object.prototype.hasOwnProperty.call(value, "value");
  const v = value.value;
  const ignoreCase = value.ignore_case;
  if (ignoreCase !== undefined) {
    if (typeof ignoreCase !== "boolean") {
      p.add(join(path, "ignore_case"), "invalid_value", "ignore_case is true or false");
      ok = false;
    } else if (op === "exists" || op === "is_empty") {
      p.add(join(path, "ignore_case"), "invalid_value", `ignore_case applies to comparisons of text; ${op} compares nothing`);
      ok = false;
    }
  }
  if (op === "exists" || op === "is_empty") {
    if (has && typeof v !== "boolean") {
      p.add(join(path, "value"), "invalid_value", `${op} takes true or false`);
      ok = false;
    }
  } else if (!has || v === undefined) {
    p.add(join(path, "value"), "required", `${op} needs a value`);
    ok = false;
  } else if ((op === "in" || op === "not_in") && !Array.isArray(v)) {
    p.add(join(path, "value"), "invalid_value", `${op} takes a list`);
    ok = false;
  } else if ((op === "gt" || op === "gte" || op === "lt" || op === "lte") && typeof v !== "number" && typeof v !== "string") {
    p.add(join(path, "value"), "invalid_value", `${op} compares with a number or a string`);
    ok = false;
  } else if ((op === "starts_with" || op === "ends_with") && typeof v !== "string") {
    p.add(join(path, "value"), "invalid_value", `${op} takes text`);
    ok = false;
  } else if (op === "matches") {
    const problem = patternProblem(v);
    if (problem !== null) {
      p.add(join(path, "value"), "invalid_pattern", problem);
      ok = false;
    }
  }
  return ok ? ({ field, op, ...(has ? { value: v } : {}), ...(ignoreCase !== undefined ? { ignore_case: ignoreCase } : {}) } as Condition) : null;
}

function readConditions(value: unknown, p: Problems, path: string, roots: readonly string[] | null): Conditions | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    p.add(path, "invalid_type", `${path || "conditions"} is an object { all?, any? }`);
    return undefined;
  }
  p.unknownKeys(value, ["all", "any"], path);
  const out: Conditions = {};
  for (const group of ["all", "any"] as const) {
    const list = value[group];
    if (list === undefined) continue;
    const at = join(path, group);
    if (!Array.isArray(list)) {
      p.add(at, "invalid_type", `${group} is a list of conditions`);
      continue;
    }
    out[group] = list.map((c, i) => readCondition(c, join(at, i), p, roots)).filter((c): c is Condition => c !== null);
  }
  return out;
}

/**
 * Reads conditions `{ all?, any? }` on their own (an applet step's `if`, a path), with every problem
 * at once, each under `path`. `roots`: the names a field may start with (default the rule's
 * payload., contact., event.), or null for any dotted path. `conditions` is set when there are no
 * problems and the input was not undefined.
 */
export function parseConditions(input: unknown, options: { path?: string; roots?: readonly string[] | null } = {}): { conditions?: Conditions; problems: RuleProblem[] } {
  const p = new Problems();
  const conditions = readConditions(input, p, options.path ?? "conditions", options.roots === undefined ? CONDITION_ROOTS : options.roots);
  return p.list.length > 0 || !conditions ? { problems: p.list } : { conditions, problems: [] };
}

function readStep(value: unknown, index: number, p: Problems): RuleStep | null {
  const path = `steps.${index}`;
  if (!isObject(value)) {
    p.add(path, "invalid_type", "a step is an object { action, offset?, anchor?, params?, lateness? }");
    return null;
  }
  p.unknownKeys(value, STEP_KEYS, path);
  const step: RuleStep = { id: String(index), action: "" };
  if (value.id !== undefined) {
    if (typeof value.id !== "string" || !ID.test(value.id)) p.add(join(path, "id"), "invalid_id", `a step id is 1-128 letters, digits, ".", "_", ":" or "-"; got ${show(value.id)}`);
    else step.id = value.id;
  }
  if (value.action === undefined) p.add(join(path, "action"), "required", "action is required");
  else if (typeof value.action !== "string" || !NAME.test(value.action)) p.add(join(path, "action"), "invalid_value", `action must be an action name such as "email.send"; got ${show(value.action)}`);
  else step.action = value.action;
  if (value.offset !== undefined) {
    checkDuration(value.offset, join(path, "offset"), p, { label: "offset" });
    step.offset = value.offset as RuleStep["offset"];
  }
  if (value.anchor !== undefined) {
    if (typeof value.anchor !== "string" || (value.anchor !== "event" && !isPath(value.anchor, null))) {
      p.add(join(path, "anchor"), "invalid_path", `anchor is "event" or a path into the payload such as "startsAt"; got ${show(value.anchor)}`);
    } else step.anchor = value.anchor;
  }
  if (value.params !== undefined) {
    if (!isObject(value.params)) p.add(join(path, "params"), "invalid_type", "params is an object");
    else step.params = value.params;
  }
  if (value.lateness !== undefined) {
    if (value.lateness !== null) checkDuration(value.lateness, join(path, "lateness"), p, { min: 0, label: "lateness" });
    step.lateness = value.lateness as RuleStep["lateness"];
  }
  return step;
}

function readQuietHours(value: unknown, p: Problems): QuietHours | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    p.add("quietHours", "invalid_type", 'quietHours is an object { start: "HH:MM", end: "HH:MM", timezone?, mode? }');
    return undefined;
  }
  p.unknownKeys(value, ["start", "end", "timezone", "mode"], "quietHours");
  let ok = true;
  const times: Record<string, number | null> = {};
  for (const key of ["start", "end"] as const) {
    const v = value[key];
    times[key] = parseClockTime(v);
    if (v === undefined) {
      p.add(`quietHours.${key}`, "required", `${key} is required`);
      ok = false;
    } else if (times[key] === null) {
      p.add(`quietHours.${key}`, "invalid_clock_time", `${key} must be a 24-hour "HH:MM"; got ${show(v)}`);
      ok = false;
    }
  }
  if (ok && times.start === times.end) {
    p.add("quietHours", "empty_window", "start and end are the same time, so the window is empty (or the whole day)");
    ok = false;
  }
  if (value.timezone !== undefined) {
    checkZone(value.timezone, "quietHours.timezone", p);
    ok &&= isValidTimeZone(value.timezone);
  }
  if (value.mode !== undefined && value.mode !== "defer" && value.mode !== "skip") {
    p.add("quietHours.mode", "invalid_value", `mode is "defer" or "skip"; got ${show(value.mode)}`);
    ok = false;
  }
  return ok ? (value as unknown as QuietHours) : undefined;
}

/**
 * Reads a rule from anywhere (a form, a stored row, a seed file). Never throws: every problem is
 * reported at once, each with a path and a stable code. The rule returned has good durations,
 * zones and clock times, step ids filled in by position, and is off unless it says enabled: true.
 */
export function parseRule(input: unknown): ParseRuleResult {
  const p = new Problems();
  if (!isObject(input)) {
    p.add("", "invalid_type", "a rule is an object");
    return { ok: false, problems: p.list };
  }
  p.unknownKeys(input, RULE_KEYS, "");

  if (input.id === undefined) p.add("id", "required", "id is required");
  else if (typeof input.id !== "string" || !ID.test(input.id)) p.add("id", "invalid_id", `a rule id is 1-128 letters, digits, ".", "_", ":" or "-"; got ${show(input.id)}`);

  if (input.enabled !== undefined && typeof input.enabled !== "boolean") p.add("enabled", "invalid_type", "enabled is true or false");
  if (input.version !== undefined && !(Number.isSafeInteger(input.version) && (input.version as number) >= 0)) p.add("version", "invalid_value", "version is a whole number, 0 or more");
  if (input.name !== undefined && typeof input.name !== "string") p.add("name", "invalid_type", "name is text");

  const trigger = input.trigger;
  let events: string[] = [];
  if (trigger === undefined) p.add("trigger", "required", "trigger is required");
  else if (!isObject(trigger)) p.add("trigger", "invalid_type", "trigger is an object { events: [...] }");
  else {
    p.unknownKeys(trigger, ["events"], "trigger");
    if (trigger.events === undefined) p.add("trigger.events", "required", "trigger.events is required");
    else if (!Array.isArray(trigger.events)) p.add("trigger.events", "invalid_type", "trigger.events is a list of event types");
    else if (trigger.events.length === 0) p.add("trigger.events", "empty", "a rule needs at least one event type");
    else
      trigger.events.forEach((e, i) => {
        if (typeof e !== "string" || !NAME.test(e)) p.add(`trigger.events.${i}`, "invalid_value", `not an event type: ${show(e)}`);
        else events.push(e);
      });
    events = [...new Set(events)];
  }

  const conditions = readConditions(input.conditions, p, "conditions", CONDITION_ROOTS);

  const steps: RuleStep[] = [];
  if (input.steps === undefined) p.add("steps", "required", "steps is required");
  else if (!Array.isArray(input.steps)) p.add("steps", "invalid_type", "steps is a list");
  else if (input.steps.length === 0) p.add("steps", "empty", "a rule needs at least one step");
  else {
    input.steps.forEach((s, i) => {
      const step = readStep(s, i, p);
      if (step) steps.push(step);
    });
    const seen = new Map<string, number>();
    steps.forEach((s, i) => {
      const first = seen.get(s.id);
      if (first !== undefined) p.add(`steps.${i}.id`, "duplicate", `step id "${s.id}" is also the id of steps.${first}; run ids would collide`);
      else seen.set(s.id, i);
    });
  }

  const quietHours = readQuietHours(input.quietHours, p);

  const cap = input.frequencyCap;
  if (cap !== undefined) {
    if (!isObject(cap)) p.add("frequencyCap", "invalid_type", "frequencyCap is an object { max, per }");
    else {
      p.unknownKeys(cap, ["max", "per"], "frequencyCap");
      if (cap.max === undefined) p.add("frequencyCap.max", "required", "max is required");
      else if (!(Number.isSafeInteger(cap.max) && (cap.max as number) >= 1)) p.add("frequencyCap.max", "invalid_value", `max is a whole number, 1 or more; got ${show(cap.max)}`);
      if (cap.per === undefined) p.add("frequencyCap.per", "required", "per is required");
      else checkDuration(cap.per, "frequencyCap.per", p, { min: 1, label: "per" });
    }
  }

  if (input.timezone !== undefined) checkZone(input.timezone, "timezone", p);

  if (p.list.length > 0) return { ok: false, problems: p.list };
  const rule: Rule = {
    id: input.id as string,
    enabled: input.enabled === true,
    ...(input.version !== undefined ? { version: input.version as number } : {}),
    ...(input.name !== undefined ? { name: input.name as string } : {}),
    trigger: { events },
    ...(conditions ? { conditions } : {}),
    steps,
    ...(quietHours ? { quietHours: { ...quietHours } } : {}),
    ...(cap !== undefined ? { frequencyCap: { ...(cap as Rule["frequencyCap"] & object) } } : {}),
    ...(input.timezone !== undefined ? { timezone: input.timezone as string } : {}),
  };
  return { ok: true, rule };
}
