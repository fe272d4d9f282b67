import type { App } from "../app";
import { UserError } from "../core/errors";
import type { RunListFilter } from "../db/store/types";
import { stepIdOf } from "../executor/types";
import { BULK_RETRY_BATCH, type BulkRetryResult } from "./bulk-retry";

/**
 * Retry from a step: a failed or dead run queued again with its journal cut just before the first
 * entry of step `stepId`. The entries before it keep their recorded outputs (the executor reuses a
 * kept entry rather than running it: lib/executor/step.ts), so the run sends nothing before X
 * again; X and everything after it run anew, even what had succeeded. A step run again keeps its
 * outbound idempotency key (per event, step and iteration): a receiver that dedupes on it treats
 * the new request as the old one; "Replay" (a new run, its own keys) is for sending everything again.
 */
export async function retryFromStep(app: Pick<App, "store" | "clock" | "bus">, runId: string, stepId: string): Promise<{ run_id: string; attempt: number; kept: number; from_step: string } | null> {
  const run = await app.store.runs.get(runId);
  if (!run) return null;
  if (run.status !== "failed" && run.status !== "dead") {
    throw new UserError(`retry: only failed or dead runs can be retried from a step; this one is ${run.status}`, [{ path: "status", message: run.status }]);
  }
  const { steps } = run;
  const at = steps.findIndex((s) => stepIdOf(s) === stepId);
  if (at < 0) {
    const ran = [...new Set(steps.map(stepIdOf))];
    throw new UserError(`retry: step "${stepId}" did not run in this run; retry from one that did: ${ran.join(", ") || "(no steps ran)"}`, [{ path: "step", message: "not in the run's journal" }]);
  }
  const kept = steps.slice(0, at);
  if (!(await app.store.runs.retry(runId, app.clock.now(), { steps: kept, attempt: run.attempt }))) {
    throw new UserError("retry: the run changed while being retried (retried or replayed a moment ago); reload it", [{ path: "status", message: "changed" }]);
  }
  app.bus.publish({ type: "run.updated", run_id: runId, applet_id: run.appletId, status: "queued" });
  return { run_id: runId, attempt: run.attempt + 1, kept: kept.length, from_step: stepId };
}

/** Which runs a filtered bulk retry takes: those the run log's filter shows, failed or dead only. */
export interface BulkRetryFilter {
  appletId?: string;
  /** `failed`, `dead`, or both when left out. */
  status?: "failed" | "dead";
  errorText?: string;
  from?: string;
  to?: string;
}

/** The most runs one filtered bulk retry takes. */
export const BULK_RETRY_FILTER_MAX = 1000;

/**
 * Bulk retry by filter, paced: the matching failed and dead runs (newest first, at most `limit`)
 * are retried in batches of BULK_RETRY_BATCH, one transaction each, and batch k is due `paceMs × k`
 * after now, so a thousand retries reach the queue (and the services behind the actions) as a
 * trickle rather than at once, without the request waiting for it.
 */
export async function retryMatching(
  app: Pick<App, "store" | "clock" | "bus">,
  filter: BulkRetryFilter,
  opts: { limit?: number; paceMs?: number } = {},
): Promise<BulkRetryResult & { matched: number; last_due_at: string | null }> {
  const limit = Math.min(opts.limit ?? BULK_RETRY_FILTER_MAX, BULK_RETRY_FILTER_MAX);
  const paceMs = opts.paceMs ?? 10_000;
  const ids: { id: string; status: string }[] = [];
  for (const status of filter.status ? [filter.status] : (["failed", "dead"] as const)) {
    let cursor: string | undefined;
    do {
      const q: RunListFilter = { appletId: filter.appletId, status, errorText: filter.errorText, from: filter.from, to: filter.to, cursor, limit: 200 };
      const page = await app.store.runs.list(q);
      for (const r of page.runs) if (ids.length < limit) ids.push({ id: r.id, status: r.status });
      cursor = page.nextCursor ?? undefined;
    } while (cursor && ids.length < limit);
  }
  const result: BulkRetryResult & { matched: number; last_due_at: string | null } = { retried: [], skipped: [], matched: ids.length, last_due_at: null };
  for (let i = 0, k = 0; i < ids.length; i += BULK_RETRY_BATCH, k++) {
    const batch = ids.slice(i, i + BULK_RETRY_BATCH);
    const now = app.clock.now();
    const due = new Date(now.getTime() + paceMs * k);
    const done = await app.store.transaction(async (tx) => {
      const out: BulkRetryResult = { retried: [], skipped: [] };
      for (const { id } of batch) {
        const run = await tx.runs.get(id);
        if (!run) out.skipped.push({ run_id: id, reason: "no such run" });
        else if (run.status !== "failed" && run.status !== "dead") out.skipped.push({ run_id: id, reason: `it is ${run.status}; only failed or dead runs are retried` });
        else if (await tx.runs.retry(id, now, { at: due })) out.retried.push({ run_id: id, applet_id: run.appletId, attempt: run.attempt + 1 });
        else out.skipped.push({ run_id: id, reason: "it changed while being retried" });
      }
      return out;
    });
    for (const r of done.retried) app.bus.publish({ type: "run.updated", run_id: r.run_id, applet_id: r.applet_id, status: "queued" });
    result.retried.push(...done.retried);
    result.skipped.push(...done.skipped);
    if (done.retried.length) result.last_due_at = due.toISOString();
  }
  return result;
}
