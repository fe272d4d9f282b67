import type { App } from "../app";
import type { StoredWait } from "../db/store/types";
import type { SentLinks } from "./sent";
import { waitSummary } from "./words";

/** A waiting run as the run log lists it: what it waits for, in words, and when it resumes on its own. */
export interface WaitingView {
  run_id: string;
  applet_id: string;
  step_id: string;
  kind: StoredWait["kind"];
  summary: string;
  since: string;
  resumes_at: string | null;
  timeout_at: string | null;
  message: string | null;
  /** Where earlier steps sent its links, and when (lib/waits/sent.ts); empty when none did. */
  sent: SentLinks[];
  /** The time a delay or until waits for, and a delay's duration: with `sent` and `timeout_at`, what a browser needs to say `summary` again in its reader's zone. */
  until: string | null;
  duration: string | null;
}

export function waitingView(w: StoredWait, now: Date): WaitingView {
  return {
    run_id: w.runId,
    applet_id: w.appletId,
    step_id: w.stepId,
    kind: w.kind,
    summary: waitSummary(w, now),
    since: w.createdAt,
    resumes_at: w.resumeAt,
    timeout_at: w.timeoutAt,
    message: typeof w.detail.message === "string" ? w.detail.message : null,
    sent: Array.isArray(w.detail.sent) ? (w.detail.sent as SentLinks[]) : [],
    until: typeof w.detail.until === "string" ? w.detail.until : null,
    duration: typeof w.detail.duration === "string" ? w.detail.duration : null,
  };
}

export type ControlResult = { ok: true } | { ok: false; status: 404 | 409; error: string };

/** The run log's Resume now: the wait ends as if its time had come (an approval counts as approved by `by`). */
export async function resumeNow(app: Pick<App, "store" | "clock" | "bus">, runId: string, by: string): Promise<ControlResult> {
  const run = await app.store.runs.get(runId);
  if (!run) return { ok: false, status: 404, error: "no such run" };
  const wait = await app.store.waits.pendingOf(runId);
  if (!wait) return { ok: false, status: 409, error: `resume: only a waiting run can be resumed; this one is ${run.status}` };
  const now = app.clock.now();
  const r = await app.store.waits.resolve({ runId, seq: wait.seq, resolution: "resumed", by, now, output: null });
  if (!r.resolved) return { ok: false, status: 409, error: `resume: the wait already ended (${r.wait?.resolution ?? "gone"})` };
  app.bus.publish({ type: "run.updated", run_id: runId, applet_id: run.appletId, status: "queued" });
  return { ok: true };
}

/** The run log's Cancel for a waiting run: it ends `cancelled`, and its links answer that they were cancelled. */
export async function cancelWaiting(app: Pick<App, "store" | "clock" | "bus">, runId: string, by: string): Promise<ControlResult> {
  const run = await app.store.runs.get(runId);
  if (!run) return { ok: false, status: 404, error: "no such run" };
  const wait = await app.store.waits.pendingOf(runId);
  const what = wait ? waitSummary(wait, app.clock.now()) : "waiting";
  if (!(await app.store.waits.cancel(runId, by, `cancelled by ${by} while ${what}`, app.clock.now()))) {
    return { ok: false, status: 409, error: `cancel: only a waiting run can be cancelled; this one is ${run.status}` };
  }
  app.bus.publish({ type: "run.updated", run_id: runId, applet_id: run.appletId, status: "cancelled" });
  return { ok: true };
}
