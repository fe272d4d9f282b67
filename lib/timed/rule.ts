/**
 * An applet's timed actions as one @vibedout/automations rule: one step per timed action (its id
 * the action's index), quiet hours and the frequency cap from `timed`. Pure.
 */
import { parseRule, type Condition, type Conditions, type ParseRuleResult, type Rule, type RuleStep } from "@vibedout/automations";
import { isValidTimeZone } from "@whenthen/schedules";
import { timedAction, topLevelActionPosition, topLevelActions, type Definition, type Problem } from "../definition/types";
import { durationOf } from "./schema";

/** The action name every step of an applet's rule carries; the sweep hands each to the executor. */
export const TIMED_ACTION = "whenthen.run";
export const DEFAULT_LATENESS = "1h";

/** Indexes (among the top-level actions, the only ones a timing may sit on) of the actions that carry a timing. */
export function timedActionIndexes(def: Pick<Definition, "steps">): number[] {
  return topLevelActions(def).flatMap((a, i) => (a.timing ? [i] : []));
}

export const hasTimedActions = (def: Pick<Definition, "steps">): boolean => topLevelActions(def).some((a) => a.timing !== undefined);

/** The step id of action `index` (part of every planned run's id). */
export const stepIdOf = (index: number): string => String(index);

function zoneOf(def: Definition): string {
  if (def.timezone) return def.timezone;
  const tz = def.trigger.config.timezone;
  return typeof tz === "string" && isValidTimeZone(tz) ? tz : "UTC";
}

/**
 * The rule, through parseRule (so the library's own checks apply); null when nothing is timed.
 * `stepActions[i]` is the action index of step i.
 */
export function ruleFor(
  appletId: string,
  def: Definition,
  opts: { eventType: string; enabled: boolean },
): { parsed: ParseRuleResult; stepActions: number[] } | null {
  const stepActions = timedActionIndexes(def);
  if (stepActions.length === 0) return null;
  const steps = stepActions.map((index): RuleStep => {
    const t = timedAction(def, index)!.timing!;
    const lateness = t.lateness === null ? null : durationOf(t.lateness ?? DEFAULT_LATENESS);
    return {
      id: stepIdOf(index),
      action: TIMED_ACTION,
      // Text the library refuses stays text, so parseRule names it.
      offset: durationOf(t.at) ?? t.at,
      anchor: t.anchor ?? "event",
      params: { actionIndex: index },
      lateness: lateness ?? (t.lateness),
    };
  });
  const q = def.timed?.quiet_hours;
  const cap = def.timed?.frequency_cap;
  const conditions = def.timed?.conditions;
  const input = {
    id: ruleIdOf(appletId),
    enabled: opts.enabled,
    trigger: { events: [opts.eventType] },
    steps,
    ...(q ? { quietHours: { start: q.start, end: q.end, ...(q.mode ? { mode: q.mode } : {}), ...(q.timezone ? { timezone: q.timezone } : {}) } } : {}),
    ...(cap ? { frequencyCap: { max: cap.max, per: durationOf(cap.per) ?? cap.per } } : {}),
    ...(conditions ? { conditions: libraryConditions(conditions) } : {}),
    timezone: zoneOf(def),
  };
  return { parsed: parseRule(input), stepActions };
}

/**
 * The definition's conditions as the library reads them: the trigger's ingredients are the event's
 * payload there (lib/timed/plan.ts puts them under `trigger`), so `trigger.body.x` is
 * `payload.trigger.body.x`; `contact.` and `event.` are the library's own roots.
 */
export function libraryConditions(c: { all?: DefinitionCondition[]; any?: DefinitionCondition[] }): Conditions {
  const map = (list: DefinitionCondition[]): Condition[] =>
    list.map((x) => ({ field: x.field.startsWith("trigger.") ? `payload.${x.field}` : x.field, op: x.op as Condition["op"], ...(x.value !== undefined ? { value: x.value } : {}), ...(x.ignore_case !== undefined ? { ignore_case: x.ignore_case } : {}) }));
  return { ...(c.all ? { all: map(c.all) } : {}), ...(c.any ? { any: map(c.any) } : {}) };
}

interface DefinitionCondition {
  field: string;
  op: string;
  value?: unknown;
  ignore_case?: boolean;
}

/** Rule ids are applet ids (uuid text, which the library's id pattern accepts). */
export const ruleIdOf = (appletId: string): string => appletId;

/** The rule for planning or sweeping; throws on a definition that did not pass checkDefinition. */
export function ruleOrThrow(appletId: string, def: Definition, opts: { eventType: string; enabled: boolean }): Rule | null {
  const built = ruleFor(appletId, def, opts);
  if (!built) return null;
  if (!built.parsed.ok) throw new Error(`timed actions: ${built.parsed.problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`);
  return built.parsed.rule;
}

/**
 * What parseRule refuses in the rule built from a definition zod accepted, with each problem's path
 * mapped back to the definition (`steps.1.offset` → `steps.3.timing.at`, the step of the timed action). Empty when nothing is timed.
 */
export function timedRuleProblems(def: Definition): Problem[] {
  const built = ruleFor("check", def, { eventType: "event", enabled: true });
  if (!built) return [];
  if (built.parsed.ok) return [];
  return built.parsed.problems.map((p) => ({ path: definitionPath(def, p.path, built.stepActions), message: p.message }));
}

function definitionPath(def: Definition, rulePath: string, stepActions: number[]): string {
  const step = /^steps\.(\d+)(?:\.(\w+))?/.exec(rulePath);
  if (step) {
    const field = step[2] === "offset" ? "at" : step[2];
    const action = stepActions[Number(step[1])];
    const position = action === undefined ? -1 : topLevelActionPosition(def, action);
    return `steps.${position >= 0 ? position : step[1]}.timing${field ? `.${field}` : ""}`;
  }
  if (rulePath.startsWith("quietHours")) return rulePath.replace("quietHours", "timed.quiet_hours");
  if (rulePath.startsWith("frequencyCap")) return rulePath.replace("frequencyCap", "timed.frequency_cap");
  if (rulePath.startsWith("conditions")) return `timed.${rulePath}`;
  return rulePath;
}
