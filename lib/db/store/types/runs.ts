/**
 * One entry of `runs.steps`, the run's journal: what a step got, what it gave back, which attempt
 * produced it, and where in the step list it ran (its id, the loop iterations around it, the
 * branches taken to reach it) with the decision a condition made and why.
 *
 * Rows stored before step lists (version 1: `kind` + `index`, no `id`) are read as they are; their
 * id is derived (`stepIdOf`): the filter is `filter`, the transform `ai`, action N `action_N`.
 */
export interface Step {
  /** The step's id in the step list (`action_1`, `filter`, `ai`, or the id written in version 2). Absent in old rows. */
  id?: string;
  /** `transform` is an AI step (the name version 1 gave it); the others are the step list's kinds. */
  kind: StepKind;
  /** Filter: "filter"; transform: the model; action: its type; if/paths/for_each/stop: the kind. */
  name: string;
  /** Position among the applet's top-level actions (top-level action steps only). */
  index?: number;
  /** The index of the item in each for_each around the step, outermost first (`[2]`, `[1, 0]`). Absent at top level. */
  iteration?: number[];
  /** The branches taken to reach the step, outermost first: `route:large/lines` (a path of `route`, then inside for_each `lines`). Absent at top level. */
  place?: string;
  /** What a condition decided: `run` / `skip` (an action's `when`), `then` / `else`, the path names taken, `otherwise`, `none`. */
  decision?: string;
  /** Why, in words: "amount 120 > 100 → path 'large'". */
  why?: string;
  /** A failure that `continue_on_error` let the run go on after: final, never retried. */
  continued?: true;
  status: "succeeded" | "failed" | "skipped" | "running";
  /** The attempt of the run that produced this record. */
  attempt: number;
  input?: unknown;
  output?: unknown;
  warnings: string[];
  logs: string[];
  started_at: string;
  duration_ms: number;
  error?: string | null;
  /** An action that sends in parts records how far it got (Discord chunks). */
  progress?: unknown;
  /** Errors of earlier attempts of this step, oldest first. */
  previous_errors?: { attempt: number; error: string; at: string }[];
  truncated?: boolean;
  /**
   * The worker stopped while this step was in flight (its run resumed the same attempt): it ran
   * again and may have run twice. Only then does the run page say so.
   */
  rerun?: true;
}

export type StepKind = "filter" | "transform" | "action" | "if" | "paths" | "for_each" | "stop" | "wait";

/**
 * `planned`: a timed run waiting for its due time; `cancelled`: one a newer version of its record
 * replaced (or cancelled from the run log); `waiting`: parked at a wait step (lib/executor/wait.ts).
 */
export type RunStatus = "queued" | "running" | "succeeded" | "failed" | "skipped" | "dead" | "planned" | "cancelled" | "waiting";
