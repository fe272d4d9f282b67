import type { RunStatus, Step } from "./types/runs";
import { readJson } from "./json";
import type { ClaimedRun, Run } from "./types";

/** A `runs` row as both engines hand it back (snake_case columns, steps as stored text). */
export interface RunRowRaw {
  id: string;
  applet_id: string;
  event_id: string;
  status: string;
  attempt: number;
  max_attempts: number;
  next_attempt_at: string | null;
  locked_by: string | null;
  locked_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  steps: string;
  planned_run_id: string | null;
  action_index: number | null;
  due_at: string | null;
  reason: string | null;
  applet_version: number | null;
  created_at: string;
  updated_at: string;
}

/**
 * A steps column that is not JSON (written by hand, or by a bug) must not make the run unreadable:
 * the claim has committed by the time the row is read, and a throw here would leave the run
 * `running` with nobody to settle it. The executor fails such a run with `stepsError`. Both
 * engines read steps as text (PostgreSQL casts them, queue-sql.ts RUN_COLUMNS).
 */
export function readSteps(text: string): { steps: Step[]; stepsError?: string } {
  try {
    const steps = readJson<unknown>(text, "the stored steps");
    return Array.isArray(steps) ? { steps: steps as Step[] } : { steps: [], stepsError: "could not read the stored steps: not a JSON array" };
  } catch (err) {
    return { steps: [], stepsError: (err as Error).message };
  }
}

/** The row as a Run. */
export const toRun = (r: RunRowRaw): Run => ({
  id: r.id,
  appletId: r.applet_id,
  eventId: r.event_id,
  status: r.status as RunStatus,
  attempt: r.attempt,
  maxAttempts: r.max_attempts,
  nextAttemptAt: r.next_attempt_at,
  lockedBy: r.locked_by,
  lockedAt: r.locked_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  error: r.error,
  ...readSteps(r.steps),
  plannedRunId: r.planned_run_id,
  actionIndex: r.action_index === null ? null : Number(r.action_index),
  dueAt: r.due_at,
  reason: r.reason,
  appletVersion: r.applet_version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** An `events` row as both engines read it for a claim (the payload as stored text). */
export interface EventRowRaw {
  id: string;
  applet_id: string;
  source: string;
  dedupe_key: string | null;
  payload: string;
  received_at: string;
}

/** The columns of the run's applet a claim reads (the definition as stored text). */
export interface ClaimedAppletRaw {
  id: string;
  name: string;
  definition: string;
  updated_at: string;
}

/**
 * The claimed run as the executor gets it: the row, its token, its event and applet as the claim
 * read them (null when gone) and whether it is a replay. A payload or definition that is not JSON
 * fails the run (readError), never the claim: the claim has gone in by now, and a throw would
 * leave the run running with no one on it.
 */
export const toClaimed = (run: Run, claimToken: string, rows: { event: EventRowRaw | null; applet: ClaimedAppletRaw | null; replay: boolean }): ClaimedRun => {
  const claimed: ClaimedRun = { ...run, claimToken, event: null, applet: null, replay: rows.replay };
  const { event, applet } = rows;
  try {
    if (event) {
      const payload = readJson<Record<string, unknown>>(event.payload, `the stored payload of event ${event.id}`);
      claimed.event = { id: event.id, appletId: event.applet_id, source: event.source, dedupeKey: event.dedupe_key, payload, receivedAt: event.received_at };
    }
    if (applet) {
      const definition = readJson<Record<string, unknown>>(applet.definition, `the stored definition of applet ${applet.id}`);
      claimed.applet = { id: applet.id, name: applet.name, definition, version: run.appletVersion ?? 0, updatedAt: applet.updated_at };
    }
    return claimed;
  } catch (err) {
    return { ...claimed, event: null, applet: null, readError: (err as Error).message };
  }
};

/** The runs list's cursor: the last row's (created_at, id), opaque to the caller. */
export const encodeCursor = (createdAt: string, id: string) => Buffer.from(`${createdAt}|${id}`).toString("base64url");
export function decodeCursor(cursor: string): [string, string] {
  const [createdAt = "", id = ""] = Buffer.from(cursor, "base64url").toString().split("|");
  return [createdAt, id];
}
