import { LIMITS, childLists, isActionStep, topLevelActions, type ActionStep, type Definition, type Step as DefStep } from "../definition/types";
import type { StepBase } from "./step";
import { actionStep } from "./steps/action";
import { aiStep } from "./steps/ai";
import { filterStep } from "./steps/filter";
import { forEachStep } from "./steps/for-each";
import { ifStep } from "./steps/if";
import { pathsStep } from "./steps/paths";
import { stopStep } from "./steps/stop";
import { iterationWords, placed, type End, type Scope, type StepKind, type Walk, type WalkContext, type WalkDeps } from "./steps/types";
import { waitStep } from "./steps/wait";
import type { Step } from "./types";

export { idempotencyKey } from "./steps/action";
export type { End, TransformRunner, WalkContext, WalkDeps } from "./steps/types";

/**
 * The step kinds, one module each under lib/executor/steps/; a step whose type is none of these
 * is an action (its type names the action plug-in).
 */
const KINDS: Record<string, StepKind<never>> = {
  filter: filterStep,
  ai: aiStep,
  if: ifStep,
  paths: pathsStep,
  for_each: forEachStep,
  stop: stopStep,
  wait: waitStep,
};

/** if, paths and for_each only choose what runs: counting them would make a for_each of the largest allowed size (1,000 items of one step) end at its last item. */
const CHOOSERS: ReadonlySet<string> = new Set(["if", "paths", "for_each"]);

/**
 * Executes a definition's step list against `ctx`, recording each step in the run's journal
 * (`deps.runner`): actions (with `when` and `continue_on_error`), filter code, AI steps, if,
 * paths, for_each, stop and wait, nested. What an earlier attempt completed (per step and
 * iteration) is reused, never run again. A timed run (`actionIndex`: the n-th top-level action)
 * runs the filter and AI steps before that action, then only that action; the event's own run
 * leaves the timed actions out. Resolves with how the run ends, or null when the list ran to its end.
 */
export async function walkSteps(deps: WalkDeps, def: Definition, ctx: WalkContext, actionIndex: number | null): Promise<End | null> {
  const w = createWalk(deps, def, actionIndex);
  const top: Scope = { iteration: [], place: "", ctx };
  if (actionIndex === null) return w.list(def.steps, top);
  // A timed run: the filter and AI steps before its action, then that action alone.
  const target = topLevelActions(def)[actionIndex]!;
  for (const step of def.steps) {
    if (step === target) return actionStep(w, target, top);
    if (step.type === "filter" || step.type === "ai") {
      const end = await one(w, step, top);
      if (end) return end;
    }
  }
  return null;
}

function one(w: Walk, step: DefStep, scope: Scope): Promise<End | null> {
  const kind = KINDS[step.type] as StepKind<DefStep> | undefined;
  return kind ? kind(w, step, scope) : actionStep(w, step as ActionStep, scope);
}

function createWalk(deps: WalkDeps, def: Definition, actionIndex: number | null): Walk {
  const { clock } = deps.app;
  let tops: Map<DefStep, number> | undefined;
  let written: Map<DefStep, number> | undefined;
  let executed = 0;
  const w: Walk = {
    deps,
    def,
    actionIndex,
    async list(steps, scope) {
      for (const step of steps) {
        if (!CHOOSERS.has(step.type) && ++executed > LIMITS.executedSteps) return limitReached(step, scope);
        const end = await one(w, step, scope);
        if (end) return end;
      }
      return null;
    },
    blank: (base: StepBase, scope, over): Step => ({
      ...base,
      ...placed(scope),
      status: "succeeded",
      attempt: deps.run.attempt,
      warnings: [],
      logs: [],
      started_at: clock.now().toISOString(),
      duration_ms: 0,
      error: null,
      ...over,
    }),
    noted(scope, id, step) {
      scope.ctx.steps[id] = { status: step.status, output: step.output ?? null, ...(step.error ? { error: step.error } : {}) };
    },
    topIndex(step) {
      tops ??= new Map(topLevelActions(def).map((a, i) => [a, i] as const));
      return tops.get(step);
    },
    writtenPosition(step: ActionStep) {
      if (!written) {
        const positions = new Map<DefStep, number>();
        const visit = (steps: DefStep[]) => {
          for (const s of steps) {
            if (isActionStep(s)) positions.set(s, positions.size);
            for (const child of childLists(s)) visit(child.steps);
          }
        };
        visit(def.steps);
        written = positions;
      }
      return written.get(step) ?? -1;
    },
  };
  return w;
}

function limitReached(step: DefStep, scope: Scope): End {
  return {
    kind: "finish",
    status: "failed",
    reason: `the run reached the limit of ${LIMITS.executedSteps.toLocaleString("en-US")} executed steps (every action, filter, AI, wait and stop of every iteration counts); it stopped before step ${step.id}${iterationWords(scope)}`,
    limit: true,
  };
}
