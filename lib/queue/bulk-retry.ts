import type { App } from "../app";

/** How many runs one transaction retries: a batch holds the write lock for ~100 small UPDATEs, no longer. */
export const BULK_RETRY_BATCH = 100;
/** The most runs one request may name (the runs page selects at most a page, 50). */
export const BULK_RETRY_MAX = 500;

export interface BulkRetryResult {
  /** Queued again now, with one more attempt (the Retry button's semantics, `runs.retry`). */
  retried: { run_id: string; applet_id: string; attempt: number }[];
  /** Left as they were, with why: only failed and dead runs are retried. */
  skipped: { run_id: string; reason: string }[];
}

/**
 * Bulk retry: the Retry button for many runs. Each batch of BULK_RETRY_BATCH runs is one
 * store transaction, so a batch is retried whole or not at all; each run goes through
 * `runs.retry` (only failed or dead runs, attempt + 1, max_attempts raised to fit, queued now),
 * exactly as one Retry click would. A run that is not failed or dead (it was retried a moment ago,
 * or is running) is skipped with its status. Wake-ups go out after each batch commits.
 */
export async function retryRuns(app: Pick<App, "store" | "clock" | "bus">, ids: readonly string[]): Promise<BulkRetryResult> {
  const unique = [...new Set(ids)];
  const result: BulkRetryResult = { retried: [], skipped: [] };
  for (let i = 0; i < unique.length; i += BULK_RETRY_BATCH) {
    const batch = unique.slice(i, i + BULK_RETRY_BATCH);
    const now = app.clock.now();
    const done = await app.store.transaction(async (tx) => {
      const out: BulkRetryResult = { retried: [], skipped: [] };
      for (const id of batch) {
        const run = await tx.runs.get(id);
        if (!run) out.skipped.push({ run_id: id, reason: "no such run" });
        else if (run.status !== "failed" && run.status !== "dead") out.skipped.push({ run_id: id, reason: `it is ${run.status}; only failed or dead runs are retried` });
        else if (await tx.runs.retry(id, now)) out.retried.push({ run_id: id, applet_id: run.appletId, attempt: run.attempt + 1 });
        else out.skipped.push({ run_id: id, reason: "it changed while being retried" });
      }
      return out;
    });
    for (const r of done.retried) app.bus.publish({ type: "run.updated", run_id: r.run_id, applet_id: r.applet_id, status: "queued" });
    result.retried.push(...done.retried);
    result.skipped.push(...done.skipped);
  }
  return result;
}
