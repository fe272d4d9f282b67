/** Timed actions: the plan an event writes and the planned runs it becomes. */
import type { CancelInstruction, CountRecentQuery, PlannedRun as LibPlannedRun, Run as LibRun } from "@vibedout/automations/types";

/** A planned run as the planner made it, with what the app adds: its applet, the action it runs, why (plain words). */
export interface PlannedRunInsert extends LibPlannedRun {
  appletId: string;
  actionIndex: number;
  /** The plan's explanation ("moved from 22:00 by quiet hours", a no_anchor warning); kept on the run. */
  note: string | null;
  /** The due time before quiet hours moved it; null when not moved. */
  originalDueAt: number | null;
  /** The max attempts of its row in `runs`. */
  maxAttempts: number;
}

/** @vibedout/automations' Plan with the app's runs: cancel older versions, insert the runs, record the version. */
export interface PlanWrite {
  runs: PlannedRunInsert[];
  cancel: CancelInstruction | null;
  /** The version the subject reaches (recorded so older events plan nothing); null records none. */
  subject: { key: string; version: number } | null;
  /** Epoch ms the writes are stamped with. */
  at: number;
}

/** A planned run as stored: the library's Run (times in epoch ms) with the app's columns. */
export interface StoredPlannedRun extends Omit<LibRun, "action" | "params" | "messageId"> {
  appletId: string;
  actionIndex: number;
  note: string | null;
  originalDueAt: number | null;
}

/** A planned run a sweep claimed (status running, token and lease set). */
export interface ClaimedPlannedRun extends StoredPlannedRun {
  status: "running";
  claimToken: string;
  leaseUntil: number;
}

/**
 * Timed actions' planned runs: @vibedout/automations' scheduler semantics on the app's
 * database (lib/timed/scheduler adapts this to the library's Scheduler for its sweepDue). Times are
 * epoch milliseconds, as the library's. Each planned run also has its row in `runs` (same id):
 * `planned` while it waits, `cancelled`/`skipped` with its reason, and `queued` once dispatched, when
 * the queue executes it like any run. Every settle is fenced by the claim token.
 */
export interface PlannedRunsStore {
  /**
   * Writes a plan (as `runs.ingest` does with `IngestInput.plan`): pending runs of older versions
   * under the cancel key are cancelled (their `runs` rows too, with the reason); each run is inserted
   * unless the subject already reached a newer version, or the id exists (a redelivery); the
   * subject's version is recorded. Returns the ids inserted and cancelled.
   */
  apply(plan: PlanWrite): Promise<{ inserted: string[]; cancelled: string[] }>;
  /**
   * Claims up to `limit` runs: pending and due, or running with a lease run out; each gets `token`, a
   * lease until now + leaseMs, attempts + 1. First, running runs whose lease ran out on their last
   * allowed attempt are failed. Ordered by due time, then id. PostgreSQL: FOR UPDATE SKIP LOCKED, so
   * concurrent sweeps take disjoint runs.
   */
  claimDue(now: number, opts: { limit: number; leaseMs: number; maxAttempts: number; token: string }): Promise<ClaimedPlannedRun[]>;
  /** Done (the send is handed on): its `runs` row goes planned → queued, due now. false: claim lost. */
  dispatch(run: ClaimedPlannedRun, now: number): Promise<boolean>;
  /** Skipped with a reason; its `runs` row too. false: claim lost. */
  skip(run: ClaimedPlannedRun, now: number, reason: string): Promise<boolean>;
  /** Failed with the error; its `runs` row too. false: claim lost. */
  fail(run: ClaimedPlannedRun, now: number, error: string | null): Promise<boolean>;
  /** Back to pending, due at `dueAt` (attempts kept). false: claim lost. */
  retry(run: ClaimedPlannedRun, now: number, dueAt: number, error: string | null): Promise<boolean>;
  /** Back to pending at `untilMs`, the attempt not counted, the lateness window moved along. false: claim lost. */
  defer(run: ClaimedPlannedRun, now: number, untilMs: number): Promise<boolean>;
  /** The frequency cap's count (`ruleId` is the applet id): done since `since`, plus live claims sorting before. */
  countRecent(q: CountRecentQuery): Promise<number>;
  get(id: string): Promise<StoredPlannedRun | null>;
  /** The applet's planned runs, by due time then id; `status` filters. */
  list(appletId: string, opts: { status?: string; limit: number }): Promise<StoredPlannedRun[]>;
  /**
   * What the anchor guard compares with: under the cancel key, the newest planned run of the step
   * (highest subject version), and the version the subject reached; null when there is neither.
   */
  latest(cancelKey: string, stepId: string): Promise<{ subjectVersion: number | null; anchorAt: number | null; reachedVersion: number | null }>;
  /** Deletes finished planned runs and version records last touched before `before`; planned runs deleted. */
  purgeFinished(before: number): Promise<number>;
}
