import { explainCondition, explainConditions, showValue, type Condition, type ConditionVerdict } from "@vibedout/automations";
import type { StepCondition, StepConditions } from "../definition/types";

/** A condition's verdict and, in words, why ("trigger.body.amount 120 > 100"). */
export type Decision = ConditionVerdict;

/**
 * Decides a step's conditions (`when`, an `if`, a path) against the run's context (`trigger`,
 * `steps`, `vars`, `ai`, `item`, `index`, … as templates see them) with packages/automations'
 * evaluator, the one evaluator of the app (what a missing field does is said there). `all` holds
 * when every entry holds, `any` when one does; groups may nest, and a flat group is exactly the
 * library's `explainConditions`.
 */
export function decide(conditions: StepConditions, ctx: Readonly<Record<string, unknown>>): Decision {
  const isAll = "all" in conditions;
  const list = (isAll ? (conditions as { all: unknown[] }).all : (conditions as { any: unknown[] }).any) as (StepCondition | StepConditions)[];
  if (!list.some(isGroup)) return explainConditions(isAll ? { all: list as Condition[] } : { any: list as Condition[] }, ctx);
  if (list.length === 0) return { holds: true, why: "no conditions" };
  const reasons: string[] = [];
  for (const entry of list) {
    const v = isGroup(entry) ? decide(entry, ctx) : explainCondition(entry as Condition, ctx);
    // The first entry that settles the group says why; otherwise every entry does.
    if (isAll ? !v.holds : v.holds) return isAll ? v : { holds: true, why: v.why };
    reasons.push(isGroup(entry) ? `(${v.why})` : v.why);
  }
  return { holds: isAll, why: reasons.join(" and ") };
}

function isGroup(c: StepCondition | StepConditions): c is StepConditions {
  return typeof c === "object" && c !== null && !("field" in c) && ("all" in c || "any" in c);
}

/** A value as the run log shows it: short, JSON for anything but numbers. */
export const show = (value: unknown): string => showValue(value);
