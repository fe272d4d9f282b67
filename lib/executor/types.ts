/** One entry of `runs.steps`: what a step got, what it gave back, and which attempt produced it. */
export interface Step {
  kind: "filter" | "transform" | "action";
  /** Filter: "filter"; transform: the model; action: its type. */
  name: string;
  /** Position among the applet's actions (action steps only). */
  index?: number;
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

/** `planned`: a timed run waiting for its due time (issue 17); `cancelled`: one a newer version of its record replaced. */
export type RunStatus = "queued" | "running" | "succeeded" | "failed" | "skipped" | "dead" | "planned" | "cancelled";
