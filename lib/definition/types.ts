import type { Timed, Timing } from "../timed/schema";
import type { RunControls } from "./controls";
import type { SignatureConfig } from "../webhooks/signature";
import type { VerifyPreset } from "../webhooks/verify";

/**
 * The applet definition, version 2: a trigger and an ordered step list. Version 1 (a filter, one AI
 * transform, then up to 20 actions) is read as the equivalent step list on load (`fromV1`).
 *
 * These are the shapes every part of the app reads; the schema that checks them (with every problem
 * reported at once, by path) lives beside them in this folder. They are written out rather than
 * `z.infer` of that schema because the schema is deliberately looser than what it admits: one
 * object for every wait kind and one node for a condition or a group (so a problem is named at
 * its field, not as "no union member matched"), and action configs from the registry at run time.
 * The parts whose schema has their exact shape are inferred: Timing, Timed (lib/timed/schema.ts),
 * RunControls (./controls.ts).
 */

/** A condition in the shape packages/automations evaluates: `{ field, op, value }` under `all` / `any`. */
export interface StepCondition {
  field: string;
  op: string;
  value?: unknown;
  ignore_case?: boolean;
}
export type StepConditions = { all: (StepCondition | StepConditions)[] } | { any: (StepCondition | StepConditions)[] };

interface StepBase {
  /** Stable id: names the step in the run log, in templates (`{{steps.<id>.output}}`) and in retries. */
  id: string;
}

/** Any action plug-in, as in version 1, with an optional inline condition and error policy. */
export interface ActionStep extends StepBase {
  /** The action plug-in's type (`http`, `slack`, …): never one of CONTROL_KINDS. */
  type: string;
  config: Record<string, unknown>;
  /** Runs only when this holds; otherwise the step is recorded as skipped with the reason. */
  when?: StepConditions;
  /** A failure is recorded (final, not retried) and the run goes on. */
  continue_on_error?: boolean;
  /** Timed actions: only top-level action steps may carry a timing. */
  timing?: Timing;
}

/** Filter code in the sandbox: `skip()` ends the run as skipped (inside a for_each: skips the item), `set()` adds vars. */
export interface FilterStep extends StepBase {
  type: "filter";
  code: string;
}

/** An AI step: its value is `{{ai.<output>}}` and `{{steps.<id>.output.value}}`. Output names are unique. */
export interface AiStep extends StepBase {
  type: "ai";
  model: string;
  prompt: string;
  output: string;
  json: boolean;
}

export interface IfStep extends StepBase {
  type: "if";
  conditions: StepConditions;
  then: Step[];
  else?: Step[];
}

export interface PathsStep extends StepBase {
  type: "paths";
  /** `first`: the first path whose conditions hold runs; `all`: every one that holds, in order. */
  mode: "first" | "all";
  paths: { name: string; conditions: StepConditions; steps: Step[] }[];
  /** Runs when no path's conditions hold. */
  otherwise?: Step[];
}

export interface ForEachStep extends StepBase {
  type: "for_each";
  /** A template naming a list: `{{trigger.body.items}}`, `{{steps.lookup.output.rows}}`. */
  items: string;
  /** At most this many items run (default LIMITS.forEachDefault, at most LIMITS.forEachMax). */
  max_items?: number;
  /** A failing item is recorded and the next item runs. */
  continue_on_error?: boolean;
  steps: Step[];
}

export interface StopStep extends StepBase {
  type: "stop";
  /** The run ends with this status. */
  status: "succeeded" | "skipped";
  /** A template, rendered into the run's reason. */
  reason?: string;
}

/**
 * A wait: the run is stored as `waiting` (no worker, no timer in memory) until a time, a call to
 * its resume URL, or a decision at its approval links resumes it through the queue, exactly once.
 * Durations are written as timed actions write them ("2h", "3d", "1h30m"); lib/executor/wait.ts runs it.
 */
export type WaitStep = StepBase & {
  type: "wait";
  /** Gives up after this long: `on_timeout` runs (then the run ends), or without it the run fails. */
  timeout?: string;
  on_timeout?: Step[];
} & (
    | { kind: "delay"; duration: string }
    | {
        kind: "until";
        /** A template that renders a time with its zone (`2026-03-07T16:00:00+01:00`, `…Z`) or epoch milliseconds. */
        at: string;
        /** When that time has already passed: carry on at once (default), or skip the rest of the run. */
        if_past?: "continue" | "skip_rest";
      }
    | {
        kind: "for_call";
        /** The webhook trigger's signature check (a preset, its secret): a call that fails it is refused and changes nothing. */
        signature?: SignatureConfig & { verify: VerifyPreset };
      }
    | {
        kind: "for_approval";
        /** A template: what the approval page shows is being approved. */
        message?: string;
        /** Runs when the approval is denied (then the run ends); without it a denial ends the run as skipped. */
        on_deny?: Step[];
      }
  );

export const WAIT_KINDS = ["delay", "until", "for_call", "for_approval"] as const;
export type WaitKind = (typeof WAIT_KINDS)[number];

export type ControlStep = FilterStep | AiStep | IfStep | PathsStep | ForEachStep | StopStep | WaitStep;
export type Step = ActionStep | ControlStep;

export const CONTROL_KINDS = ["filter", "ai", "if", "paths", "for_each", "stop", "wait"] as const;
export type ControlKind = (typeof CONTROL_KINDS)[number];

export const LIMITS = {
  /** Steps written in one applet, nested ones included. */
  steps: 50,
  /** Nesting depth of if / paths / for_each. */
  depth: 5,
  forEachDefault: 100,
  forEachMax: 1000,
  /** Steps executed in one run (every iteration counts). */
  executedSteps: 1000,
  /** The longest a wait step may wait (its duration, its timeout), in days. */
  waitDays: 365,
} as const;

/** Step ids: short, template-safe (`{{steps.lookup.output}}`). */
export const STEP_ID = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export interface Definition {
  version: 2;
  trigger: { type: string; config: Record<string, unknown> };
  steps: Step[];
  retry?: { max_attempts: number };
  /** IANA zone for the `date` filter and `now_local` (default: the schedule's zone, else UTC). */
  timezone?: string;
  /** Timed actions' applet-wide settings. */
  timed?: Timed;
  /** Controls over runs: concurrency, rate limit, debounce (lib/definition/controls.ts); absent: one at a time, in order. */
  controls?: RunControls;
}

/** Version 1, as stored by earlier releases and still accepted on import. */
export interface DefinitionV1 {
  version: 1;
  trigger: { type: string; config: Record<string, unknown> };
  filter?: { code: string };
  transform?: { model: string; prompt: string; output: string; json: boolean };
  actions: { type: string; config: Record<string, unknown>; timing?: Timing }[];
  retry?: { max_attempts: number };
  timezone?: string;
  timed?: Timed;
  controls?: RunControls;
}

export interface Problem {
  path: string;
  message: string;
}

export function isControlStep(step: Step): step is ControlStep {
  return (CONTROL_KINDS as readonly string[]).includes(step.type);
}

export function isActionStep(step: Step): step is ActionStep {
  return !isControlStep(step);
}

/** The step lists nested in a step, each with its path below the step (`then`, `paths.1.steps`). */
export function childLists(step: Step): { path: string; steps: Step[] }[] {
  switch (step.type) {
    case "if":
      return [{ path: "then", steps: (step as IfStep).then }, ...((step as IfStep).else ? [{ path: "else", steps: (step as IfStep).else! }] : [])];
    case "paths": {
      const s = step as PathsStep;
      return [...s.paths.map((p, i) => ({ path: `paths.${i}.steps`, steps: p.steps })), ...(s.otherwise ? [{ path: "otherwise", steps: s.otherwise }] : [])];
    }
    case "for_each":
      return [{ path: "steps", steps: (step as ForEachStep).steps }];
    case "wait": {
      const w = step as WaitStep;
      return [...(w.on_timeout ? [{ path: "on_timeout", steps: w.on_timeout }] : []), ...(w.kind === "for_approval" && w.on_deny ? [{ path: "on_deny", steps: w.on_deny }] : [])];
    }
    default:
      return [];
  }
}

/** Every step, depth first in written order, with its path (`steps.2.then.0`) and depth (0 = top level). */
export function* walkSteps(steps: Step[], base = "steps", depth = 0): Generator<{ step: Step; path: string; depth: number }> {
  for (const [i, step] of steps.entries()) {
    const path = `${base}.${i}`;
    yield { step, path, depth };
    for (const child of childLists(step)) yield* walkSteps(child.steps, `${path}.${child.path}`, depth + 1);
  }
}

/** The top-level action steps in order: the only ones a timing may sit on; `timedAction(def, n)` counts these. */
export function topLevelActions(def: Pick<Definition, "steps">): ActionStep[] {
  return def.steps.filter(isActionStep);
}

/** Every action step, nested ones included, in written order. */
export function allActions(def: Pick<Definition, "steps">): ActionStep[] {
  const out: ActionStep[] = [];
  for (const { step } of walkSteps(def.steps)) if (isActionStep(step)) out.push(step);
  return out;
}

/**
 * Version 1 as the equivalent step list: the filter (`filter`), the transform (`ai`), then the
 * actions (`action_1` …). The ids keep what the run log and retries of runs stored by version 1
 * call these steps.
 */
export function fromV1(v1: DefinitionV1): Definition {
  const steps: Step[] = [];
  if (v1.filter) steps.push({ id: "filter", type: "filter", code: v1.filter.code });
  if (v1.transform) steps.push({ id: "ai", type: "ai", ...v1.transform });
  for (const [i, a] of v1.actions.entries()) steps.push({ id: `action_${i + 1}`, type: a.type, config: a.config, ...(a.timing ? { timing: a.timing } : {}) });
  const { filter: _f, transform: _t, actions: _a, version: _v, ...rest } = v1;
  return { version: 2, ...rest, steps };
}

/**
 * The version 1 form of a step list that has one (at most a leading filter and AI step, then plain
 * actions without conditions): simple applets stay simple in the editor and in exports read by
 * older releases. Null when the list uses anything version 1 cannot say.
 */
export function asLinear(def: Definition): DefinitionV1 | null {
  let i = 0;
  const steps = def.steps;
  const filter = steps[i]?.type === "filter" ? (steps[i++] as FilterStep) : undefined;
  const ai = steps[i]?.type === "ai" ? (steps[i++] as AiStep) : undefined;
  const actions: DefinitionV1["actions"] = [];
  for (; i < steps.length; i++) {
    const s = steps[i]!;
    if (!isActionStep(s) || s.when || s.continue_on_error || s.id !== `action_${actions.length + 1}`) return null;
    actions.push({ type: s.type, config: s.config, ...(s.timing ? { timing: s.timing } : {}) });
  }
  if (actions.length === 0 || actions.length > 20) return null;
  if ((filter && filter.id !== "filter") || (ai && ai.id !== "ai")) return null;
  const { steps: _s, version: _v, ...rest } = def;
  return {
    version: 1,
    trigger: rest.trigger,
    ...(filter ? { filter: { code: filter.code } } : {}),
    ...(ai ? { transform: { model: ai.model, prompt: ai.prompt, output: ai.output, json: ai.json } } : {}),
    actions,
    ...(rest.retry ? { retry: rest.retry } : {}),
    ...(rest.timezone ? { timezone: rest.timezone } : {}),
    ...(rest.timed ? { timed: rest.timed } : {}),
    ...(rest.controls ? { controls: rest.controls } : {}),
  };
}

/** The n-th top-level action (0-based): what a timed action's index and a v1 `actions.n` name. */
export function timedAction(def: Pick<Definition, "steps">, n: number): ActionStep | undefined {
  return topLevelActions(def)[n];
}

/** Where the n-th top-level action sits in `steps` (its path is `steps.<that>`); -1 when there is none. */
export function topLevelActionPosition(def: Pick<Definition, "steps">, n: number): number {
  let seen = -1;
  for (const [i, s] of def.steps.entries()) if (isActionStep(s) && ++seen === n) return i;
  return -1;
}
