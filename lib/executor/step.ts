import type { Clock } from "../core/clock";
import { ActionError, errorMessage, isDatabaseError } from "../core/errors";
import { LIMITS, capJson } from "../core/limits";
import type { Redactor } from "../secrets/redact";
import { journalKey, type Step } from "./types";

/**
 * What identifies a step within its run: its id and iteration (`journalKey`), with where it ran and
 * what decided it. Old callers name version 1's steps by kind and action index; their id is derived.
 */
export type StepBase = Pick<Step, "kind" | "name" | "index"> & Partial<Pick<Step, "id" | "iteration" | "place" | "decision" | "why">>;

/** What a step's body hands back when it returns (throwing records a failed step instead). */
export interface StepResult<T> {
  /** The step's own verdict; `succeeded` when left out. A filter that threw is `failed` without throwing. */
  status?: "succeeded" | "skipped" | "failed";
  output?: unknown;
  error?: string | null;
  logs?: string[];
  /** The duration the step measured itself (the sandbox's own timing); the clock's otherwise. */
  durationMs?: number;
  /** Whatever the caller needs from the body (the sandbox result, the transform value). */
  value: T;
}

/** The record being built, as the body sees it. */
export interface StepHandle {
  readonly record: Step;
  /** Records what the step got: redacted first (a cut could split a secret where no pattern finds it), then capped. */
  setInput(input: unknown): void;
  /** Records how far a step that sends in parts got, and stores it with the steps so far at once. */
  saveProgress: (progress: unknown) => Promise<void>;
}

export type StepOutcome<T> =
  /** An earlier attempt of this run succeeded at this step: its record is carried over and it is not run again. */
  | { state: "reused"; step: Step }
  /** The body returned; `step.status` is its verdict. */
  | { state: "done"; step: Step; value: T }
  /** The body threw `error`; the failed step is recorded. */
  | { state: "failed"; step: Step; error: unknown }
  /** Storing the steps before this one found the claim taken over: nothing was run. */
  | { state: "lost" };

export interface StepRunnerDeps {
  /** The attempt of the run being executed. */
  attempt: number;
  /** The steps the run's earlier attempts recorded. */
  earlier: readonly Step[];
  clock: Pick<Clock, "now">;
  /** The run's redactor: everything a step records goes through it. */
  redactor: Redactor;
  /** Stores the steps so far; false when the claim was taken over. */
  save: (steps: Step[]) => boolean | Promise<boolean>;
}

export interface StepRunner {
  /** The steps of this attempt so far, in order (reused ones included). */
  readonly steps: Step[];
  /** Whether an earlier attempt succeeded at this step (so it will be reused rather than run). */
  succeededBefore(base: Pick<Step, "kind" | "index" | "id" | "iteration">): boolean;
  /** What an earlier attempt recorded for this step and iteration, whatever its status. */
  earlier(base: Pick<Step, "kind" | "index" | "id" | "iteration">): Step | undefined;
  /**
   * Records an entry that ran nothing (a decision, a skipped action, a loop's summary) without a
   * checkpoint before it: only steps that act need one. Returns the entry, which the caller may
   * still complete (a for_each's counts) before the next save.
   */
  record(entry: Step): Step;
  /** An entry recorded earlier was completed in place (a for_each's counts): the next checkpoint stores it. */
  touch(): void;
  /**
   * Runs one step: reuses what an earlier attempt succeeded at; otherwise first stores the steps
   * recorded since the last save (the checkpoint a crash resumes from), then runs `body`, times
   * it, and records its input, output and error redacted and capped, with the errors of earlier
   * attempts of the same step. A database error from the body is not the step's fault: it is
   * rethrown for the run to be handed back to the queue.
   */
  run<T>(base: StepBase, body: (step: StepHandle) => Promise<StepResult<T>>): Promise<StepOutcome<T>>;
}

export function createStepRunner(deps: StepRunnerDeps): StepRunner {
  const { attempt, clock, redactor, save } = deps;
  const prior = new Map(deps.earlier.map((s) => [journalKey(s), s]));
  const steps: Step[] = [];
  // Steps recorded since the last save; reused ones are already stored.
  let unsaved = false;

  return {
    steps,
    succeededBefore: (base) => prior.get(journalKey(base))?.status === "succeeded",
    earlier: (base) => prior.get(journalKey(base)),
    record(entry) {
      steps.push(entry);
      unsaved = true;
      return entry;
    },
    touch() {
      unsaved = true;
    },
    async run<T>(base: StepBase, body: (step: StepHandle) => Promise<StepResult<T>>): Promise<StepOutcome<T>> {
      const previous = prior.get(journalKey(base));
      if (previous && isFinal(previous)) {
        steps.push(previous);
        return { state: "reused", step: previous };
      }
      if (unsaved) {
        unsaved = false;
        if (!(await save(steps))) return { state: "lost" };
      }
      const started = clock.now();
      const step: Step = {
        ...base,
        status: "running",
        attempt,
        warnings: [],
        logs: [],
        started_at: started.toISOString(),
        duration_ms: 0,
        error: null,
      };
      if (previous?.progress !== undefined) step.progress = previous.progress;
      withHistory(step, previous);
      const handle: StepHandle = {
        record: step,
        setInput: (input) => setCapped(step, "input", redactor.redact(input)),
        // Stored before the action sends its next part (an async store resolves after the write).
        saveProgress: async (progress) => {
          step.progress = progress;
          await save([...steps, step]);
        },
      };
      const elapsed = () => clock.now().getTime() - started.getTime();
      try {
        const result = await body(handle);
        step.status = result.status ?? "succeeded";
        if (result.logs) step.logs = result.logs;
        if (result.error) step.error = redactor.redact(result.error);
        if (result.output !== undefined) setCapped(step, "output", redactor.redact(result.output));
        step.duration_ms = result.durationMs ?? elapsed();
        steps.push(step);
        unsaved = true;
        return { state: "done", step, value: result.value };
      } catch (err) {
        if (isDatabaseError(err)) throw err;
        step.status = "failed";
        step.error = redactor.redact(errorMessage(err));
        if (err instanceof ActionError && err.output !== undefined) setCapped(step, "output", redactor.redact(err.output));
        step.duration_ms = elapsed();
        steps.push(step);
        unsaved = true;
        return { state: "failed", step, error: err };
      }
    },
  };
}

/**
 * An earlier attempt's entry that is kept rather than run again: one that succeeded, one that was
 * skipped (its condition, its filter), and a failure `continue_on_error` made final.
 */
const isFinal = (s: Step): boolean => s.status === "succeeded" || s.status === "skipped" || (s.status === "failed" && s.continued === true);

/** Stored inputs and outputs are capped at 64 KB like every stored payload, marked `truncated` when cut. */
function setCapped(step: Step, field: "input" | "output", value: unknown): void {
  const capped = capJson(value);
  step[field] = capped.value;
  if (capped.truncated) step.truncated = true;
}

/** Keeps the errors of earlier attempts of the same step on the new record. */
function withHistory(step: Step, previous: Step | undefined): void {
  if (!previous || previous.status !== "failed") {
    if (previous?.previous_errors?.length) step.previous_errors = previous.previous_errors;
    return;
  }
  step.previous_errors = [
    ...(previous.previous_errors ?? []),
    { attempt: previous.attempt, error: previous.error ?? "failed", at: previous.started_at },
  ].slice(-LIMITS.logLines);
}
