import type { Applet, Run } from "@/lib/db/store";
import { toText } from "../core/text";
import { looseActions } from "../definition/loose";
import { shownRunStatus } from "../db/store/types/run-status";

/** Repo rows in the API's JSON shape: the API and the server-rendered pages share it, so the browser sees one shape. */
export function runRow(r: Run, appletName: string | null) {
  return {
    id: r.id,
    applet_id: r.appletId,
    applet_name: appletName,
    event_id: r.eventId,
    // `retrying`: queued again after a failed attempt (lib/db/store/types/run-status).
    status: shownRunStatus(r),
    attempt: r.attempt,
    max_attempts: r.maxAttempts,
    next_attempt_at: r.nextAttemptAt,
    started_at: r.startedAt,
    finished_at: r.finishedAt,
    error: r.error,
    /** The applet version this run executes with (set when it starts); null before that, and for runs from before version history. */
    applet_version: r.appletVersion,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    // Timed runs (the names of W17's contract): null on ordinary runs.
    plannedRunId: r.plannedRunId,
    actionIndex: r.actionIndex,
    dueAt: r.dueAt,
    reason: r.reason,
  };
}

export function actionTypesOf(a: Applet): string[] {
  // Every action step, nested ones too, in written order (version 1's actions, for an older row).
  return looseActions(a.definition).map((x) => toText(x.type));
}
