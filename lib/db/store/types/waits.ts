/** Waits: runs parked at a wait step until a time, a call or an approval. */
import type { RunStatus, Step } from "./runs";
import type { ClaimedRun } from "./runs-store";

/** How a wait ended: its time came, it timed out, its call came, a decision, the run log's resume-now or cancel. */
export type WaitResolution = "time" | "timeout" | "called" | "approved" | "denied" | "resumed" | "cancelled";

/** What a run parked at a wait step waits for (lib/executor/wait.ts builds it). */
export interface WaitInsert {
  /** The run's n-th wait (0-based): its resume and approval links name it. */
  seq: number;
  stepId: string;
  kind: "delay" | "until" | "for_call" | "for_approval";
  /** When the tick resumes it (its time or its timeout, the earlier); null: only a call or a decision does. */
  resumeAt: Date | null;
  resumeAs: "time" | "timeout" | null;
  timeoutAt: Date | null;
  /** What the run log and the approval page show (the rendered approval message, the time waited for). */
  detail: Record<string, unknown>;
  /** The run log's words while it waits ("waiting for approval — times out 16:02"), kept as the run's reason. */
  summary: string;
  /**
   * Strict order (the applet's controls.order): the run keeps its lane while it waits, so the
   * applet's later runs in that lane are not started until it has resumed and finished.
   */
  holdsLane?: boolean;
}

export interface StoredWait {
  runId: string;
  seq: number;
  appletId: string;
  stepId: string;
  kind: WaitInsert["kind"];
  resumeAt: string | null;
  resumeAs: "time" | "timeout" | null;
  timeoutAt: string | null;
  detail: Record<string, unknown>;
  resolution: WaitResolution | null;
  resolvedAt: string | null;
  /** Who resolved it: the address a call or decision came from, a user of the run log, "clock". */
  resolvedBy: string | null;
  /** A call's body (parsed JSON or text), a decision's record. */
  output: unknown;
  createdAt: string;
  /** The run's status now. */
  runStatus: RunStatus;
}

export interface WaitResolve {
  runId: string;
  seq: number;
  resolution: WaitResolution;
  by: string;
  output: unknown;
  now: Date;
  /** A resume call may arrive before its run reached the wait: the call is kept and the wait ends at once when reached. */
  early?: { appletId: string; kind: WaitInsert["kind"] };
}

/**
 * Waiting runs: a run parked at a wait step is its `runs` row (status `waiting`, no lock, no
 * token) plus a `run_waits` row saying what resumes it. Each wait is resolved exactly once (a
 * conditional update), and in that same transaction its run goes back to `queued`.
 */
export interface WaitsStore {
  /**
   * Parks a claimed run (fenced by its claim token) with its steps so far. When its wait was already
   * resolved (a call that came first), the run is queued again instead. "lost": the claim was taken over.
   */
  suspend(run: ClaimedRun, steps: Step[], wait: WaitInsert, now: Date): Promise<"waiting" | "queued" | "lost">;
  get(runId: string, seq: number): Promise<StoredWait | null>;
  /** The unresolved wait of a run, if it is waiting. */
  pendingOf(runId: string): Promise<StoredWait | null>;
  /**
   * Resolves an unresolved wait and queues its run: "resolved" for exactly one caller; otherwise
   * the wait as it is (already resolved, or none: null).
   */
  resolve(r: WaitResolve): Promise<{ resolved: true } | { resolved: false; wait: StoredWait | null }>;
  /** The tick: resolves up to `limit` waits due at `now` (as their `resume_as`) and queues their runs; returns how many. */
  resumeDue(now: Date, limit: number): Promise<number>;
  /** Cancels a waiting run: its wait resolved `cancelled`, the run `cancelled` with `reason`. false: it was not waiting. */
  cancel(runId: string, by: string, reason: string, now: Date): Promise<boolean>;
  /** The unresolved waits of waiting runs, soonest first (no time last), at most `limit`; of one applet when given. */
  listWaiting(opts: { appletId?: string; limit: number }): Promise<StoredWait[]>;
  /** How many runs are waiting, by kind. */
  countWaiting(): Promise<Record<string, number>>;
}
