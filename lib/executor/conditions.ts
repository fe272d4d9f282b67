import { evaluateCondition, type ConditionScope } from "@vibedout/automations";
import type { StepCondition, StepConditions } from "../definition/types";

/** A condition's verdict and, in words, why ("trigger.body.amount 120 > 100"). */
export interface Decision {
  holds: boolean;
  why: string;
}

/**
 * Decides a step's conditions (`when`, an `if`, a path) against the run's context (`trigger`,
 * `steps`, `vars`, `ai`, `item`, `index`, … as templates see them), with packages/automations'
 * evaluator: one evaluator for every condition in the app. `all` holds when every entry holds,
 * `any` when one does; entries may nest.
 */
export function decide(conditions: StepConditions, ctx: Record<string, unknown>): Decision {
  const scope = ctx as unknown as ConditionScope;
  const group = (c: StepConditions): Decision => {
    const isAll = "all" in c;
    const list = (isAll ? (c as { all: unknown[] }).all : (c as { any: unknown[] }).any) as (StepCondition | StepConditions)[];
    const parts: Decision[] = [];
    for (const entry of list) {
      const d = isGroup(entry) ? group(entry) : one(entry);
      parts.push(d);
      // Stop at the first entry that settles the group: the words say what decided.
      if (isAll ? !d.holds : d.holds) return d;
    }
    if (parts.length === 0) return { holds: isAll, why: isAll ? "no conditions" : "no conditions to meet" };
    return { holds: isAll, why: parts.map((p) => p.why).join(isAll ? " and " : " or ") };
  };
  const one = (c: StepCondition): Decision => {
    const holds = evaluateCondition({ field: c.field, op: c.op as never, value: c.value }, scope);
    return { holds, why: describe(c, lookup(ctx, c.field), holds) };
  };
  return group(conditions);
}

function isGroup(c: StepCondition | StepConditions): c is StepConditions {
  return typeof c === "object" && c !== null && ("all" in c || "any" in c) && !("field" in c);
}

const SYMBOL: Record<string, [string, string]> = {
  eq: ["=", "≠"],
  ne: ["≠", "="],
  gt: [">", "≤"],
  gte: ["≥", "<"],
  lt: ["<", "≥"],
  lte: ["≤", ">"],
  in: ["in", "not in"],
  not_in: ["not in", "in"],
  contains: ["contains", "does not contain"],
};

function describe(c: StepCondition, found: { value: unknown } | null, holds: boolean): string {
  const name = c.field.split(".").at(-1) ?? c.field;
  if (found === null) return `${name} is missing`;
  if (c.op === "exists") return `${name} exists`;
  const sym = SYMBOL[c.op];
  const op = sym ? sym[holds ? 0 : 1] : holds ? c.op : `not ${c.op}`;
  return `${name} ${show(found.value)} ${op} ${show(c.value)}`;
}

/** A value as the run log shows it: short, JSON for anything but plain text and numbers. */
export function show(value: unknown): string {
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

function lookup(root: unknown, path: string): { value: unknown } | null {
  let current = root;
  for (const key of path.split(".")) {
    if (current === null || typeof current !== "object" || !Object.prototype.hasOwnProperty.call(current, key)) return null;
    current = (current as Record<string, unknown>)[key];
  }
  return current === undefined ? null : { value: current };
}
