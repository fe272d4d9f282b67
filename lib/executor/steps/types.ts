import type { ActionPlugin } from "../../actions/types";
import type { Clock } from "../../core/clock";
import type { AppConfig } from "../../core/config";
import type { Logger } from "../../core/log";
import type { ClaimedRun } from "../../db/store";
import type { StoredWait, WaitInsert } from "../../db/store/types";
import type { ActionStep, AiStep, Definition, Step as DefStep } from "../../definition/types";
import type { SafeFetch } from "../../net/types";
import type { Sandbox } from "../../sandbox";
import type { Redactor } from "../../secrets/redact";
import type { TemplateContext } from "../../template";
import type { StepBase, StepRunner } from "../step";
import type { Step } from "../types";

/** Runs an AI step (lib/transform.ts); returns the value to put under `ai.<output>`. */
export type TransformRunner = (
  transform: Pick<AiStep, "model" | "prompt" | "output" | "json">,
  ctx: TemplateContext,
  timezone: string,
) => Promise<{ value: unknown; input: unknown; warnings: string[]; secretsUsed: string[]; skipped?: boolean }>;

/** How a walk ended before the end of the step list; `null` from a list means "carry on". */
export type End =
  /** The run ends with this status and reason (a stop step, a filter's skip, a failure that is final). */
  | {
      kind: "finish";
      status: "succeeded" | "skipped" | "failed";
      reason: string | null;
      /** A filter's `skip()`: inside a for_each it skips the item, elsewhere it ends the run. */
      skipItem?: true;
      /** A limit of the run: no continue_on_error catches it. */
      limit?: true;
    }
  /** A step failed: retried when the error says so (the run's retry policy), final otherwise. */
  | { kind: "failure"; error: unknown; where: string }
  /** Storing a checkpoint found the claim taken over. */
  | { kind: "lost" }
  /** A wait step: the run is to be parked (lib/executor/wait.ts) until what it waits for resumes it. */
  | { kind: "wait"; wait: WaitInsert };

export interface WalkDeps {
  app: { clock: Clock; config: AppConfig; http: SafeFetch };
  actions: ReadonlyMap<string, ActionPlugin>;
  sandbox?: Sandbox;
  transform?: TransformRunner;
  run: Pick<ClaimedRun, "id" | "attempt" | "appletId" | "eventId" | "replay" | "plannedRunId">;
  applet: { id: string; name: string };
  /**
   * A dry run (lib/executor/dry-run.ts): `actions` and `app.http` record instead of sending, and
   * steps that would make the run wait (a timed action, a wait) are shown and passed at once.
   */
  dryRun?: true;
  runner: StepRunner;
  redactor: Redactor;
  log: Logger;
  timezone: string;
  /** The stored state of the run's n-th wait (resolved or not); absent: waits are never resolved here. */
  waitOf?: (seq: number) => Promise<StoredWait | null>;
}

/** The template context plus the step outputs (`steps.<id>`), vars and AI values every step adds to. */
export interface WalkContext extends TemplateContext {
  steps: Record<string, { status: Step["status"]; output: unknown; error?: string | null }>;
  vars: Record<string, unknown>;
  ai: Record<string, unknown>;
}

/** Where a step runs: the loop iterations around it, the branches taken to reach it, the context its templates see. */
export interface Scope {
  iteration: number[];
  place: string;
  ctx: WalkContext;
}

/** One walk of a step list, as each step kind (lib/executor/steps/<kind>.ts) sees it. */
export interface Walk {
  readonly deps: WalkDeps;
  readonly def: Definition;
  /** A timed run's action (the n-th top-level action); null for the event's own run. */
  readonly actionIndex: number | null;
  /** Runs a list of steps in `scope` (the nested lists of if, paths, for_each and wait too). */
  list(steps: DefStep[], scope: Scope): Promise<End | null>;
  /** A journal entry for a step that ran nothing itself (a decision, a skip), `over` on top. */
  blank(base: StepBase, scope: Scope, over: Partial<Step>): Step;
  /** Makes a step's outcome visible to later templates as `steps.<id>`. */
  noted(scope: Scope, id: string, step: Step): void;
  /** The position of a top-level action among the definition's top-level actions. */
  topIndex(step: ActionStep): number | undefined;
  /** An action's position among all the definition's actions, nested ones included, as written. */
  writtenPosition(step: ActionStep): number;
}

/** A step kind: runs one step of its kind in `scope`; null means carry on with the next step. */
export type StepKind<S> = (w: Walk, step: S, scope: Scope) => Promise<End | null>;

export function placed(scope: Scope): Pick<Step, "iteration" | "place"> {
  return { ...(scope.iteration.length ? { iteration: scope.iteration } : {}), ...(scope.place ? { place: scope.place } : {}) };
}

export const joinPlace = (place: string, part: string): string => (place ? `${place}/${part}` : part);
export const inBranch = (scope: Scope, part: string): Scope => ({ ...scope, place: joinPlace(scope.place, part) });
export const iterationWords = (scope: Scope): string => (scope.iteration.length ? ` [item ${scope.iteration.join(".")}]` : "");
