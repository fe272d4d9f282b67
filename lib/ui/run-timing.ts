import { fromZonedTime } from "date-fns-tz";
import type { Step } from "@/lib/executor/types";
import { shownRunStatus, type ShownRunStatus } from "./run-status";

/** The fields of a run row (GET /api/runs) these read. */
interface RunRow {
  status: ShownRunStatus;
  attempt: number;
  max_attempts: number;
  next_attempt_at: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/**
 * How a run's times read on the screens, pure (tests pass the zone and the formatter).
 */

/**
 * A run that failed and waits for its next attempt, rather than a fresh one in line: `retrying` as
 * the API shows it, or a stored `queued` row with attempt > 1.
 */
export function isWaitingForRetry(run: Pick<RunRow, "status" | "attempt" | "next_attempt_at">): boolean {
  return (run.status === "retrying" || shownRunStatus(run) === "retrying") && run.next_attempt_at !== null;
}

/**
 * "retrying: attempt 3 of 5 pending at 10:14". The run's `attempt` is the one waiting to start
 * (attempt 2 failed), so it is said to be pending, never as if it had run. `time` formats the
 * instant for the reader.
 */
export function retryLabel(run: Pick<RunRow, "status" | "attempt" | "max_attempts" | "next_attempt_at">, time: (iso: string) => string): string | null {
  if (!isWaitingForRetry(run)) return null;
  return `retrying: attempt ${run.attempt} of ${run.max_attempts} pending at ${time(run.next_attempt_at!)}`;
}

/**
 * When the run began and how long it has taken across all its attempts. `started_at` is the last
 * attempt's start; the first attempt's is the earliest start any step recorded, its earlier
 * attempts included, else the run's creation.
 */
export function runSpan(run: Pick<RunRow, "attempt" | "created_at" | "started_at" | "finished_at"> & { steps: Pick<Step, "started_at" | "previous_errors">[] }): { firstStart: string | null; lastAttemptMs: number | null; totalMs: number | null } {
  const lastAttemptMs = run.started_at && run.finished_at ? Date.parse(run.finished_at) - Date.parse(run.started_at) : null;
  if (run.attempt <= 1) return { firstStart: run.started_at, lastAttemptMs, totalMs: lastAttemptMs };
  // A step's record is its latest attempt; the starts of its earlier attempts are in its history.
  const starts = run.steps.flatMap((s) => [s.started_at, ...(s.previous_errors ?? []).map((e: { at: string }) => e.at)]).filter(Boolean);
  const firstStart = starts.length ? starts.reduce((a, b) => (Date.parse(a) <= Date.parse(b) ? a : b)) : run.created_at;
  const totalMs = run.finished_at ? Date.parse(run.finished_at) - Date.parse(firstStart) : null;
  return { firstStart, lastAttemptMs, totalMs };
}

/** Whether the worker stopped while a step of this run was in flight and the step ran again. */
export const reranAfterCrash = (steps: Pick<Step, "rerun">[]): boolean => steps.some((s) => s.rerun === true);

/**
 * The runs filter's From/To days as instants: whole days in the reader's zone (the same zone the
 * table's times are shown in), `to` including its day. An unknown zone is UTC.
 */
export function dayBounds(from: string | undefined, to: string | undefined, timeZone: string): { from?: string; to?: string } {
  const zone = validZone(timeZone) ? timeZone : "UTC";
  const start = (day: string) => fromZonedTime(`${day}T00:00:00.000`, zone);
  const nextDay = (day: string) => {
    const d = new Date(`${day}T00:00:00.000Z`);
    d.setUTCDate(d.getUTCDate() + 1);
    return d.toISOString().slice(0, 10);
  };
  return {
    from: from ? start(from).toISOString() : undefined,
    to: to ? new Date(start(nextDay(to)).getTime() - 1).toISOString() : undefined,
  };
}

export function validZone(tz: string | undefined): tz is string {
  if (!tz) return false;
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
