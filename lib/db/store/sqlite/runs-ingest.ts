import { newId } from "../../../core/ids";
import type { Sqlite } from "./client";
import type { Ingested, IngestInput, PlanWrite } from "../types";

/** An event; a taken dedupe key inserts nothing. Parameters: id, applet, source, dedupe key, payload, received_at, created_at, updated_at. */
export const INSERT_EVENT_SQL = `INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`;
/**
 * Its queued run; next_attempt_at is set at insert so the claim can order by one indexed column.
 * Parameters: id, applet, event, max attempts, next_attempt_at, created_at, updated_at.
 */
export const INSERT_RUN_SQL = `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at)
     VALUES (?, ?, ?, 'queued', 1, ?, ?, '[]', ?, ?)`;

/** Events in: one (a transaction inserting the event and its queued run), a batch (group commit), or one recorded as skipped. */
export function createRunsIngest(
  sqlite: Sqlite,
  applyPlan: (plan: PlanWrite) => unknown,
  /** The ingest of an event whose applet has controls over runs (./run-controls.ts). */
  ingestControlled?: (i: IngestInput) => Ingested,
) {
  const insertEvent = sqlite.prepare(INSERT_EVENT_SQL);
  const insertRun = sqlite.prepare(INSERT_RUN_SQL);
  const ingestRow = (i: IngestInput): Ingested => {
    if (i.controls && ingestControlled) return ingestControlled(i);
    const eventId = i.eventId ?? newId();
    const inserted = insertEvent.run(eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, i.receivedAt, i.receivedAt);
    if (inserted.changes === 0) return null;
    const runId = newId();
    insertRun.run(runId, i.appletId, eventId, i.maxAttempts, i.receivedAt, i.receivedAt, i.receivedAt);
    // Timed actions: planned in the event's transaction, only when the event was stored.
    if (i.plan) applyPlan(i.plan);
    return { eventId, runId };
  };
  const ingestTx = sqlite.transaction(ingestRow);
  const insertSkippedRun = sqlite.prepare(
    `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, error, finished_at, created_at, updated_at, applet_version)
     VALUES (?, ?, ?, 'skipped', 1, ?, NULL, '[]', ?, ?, ?, ?, (SELECT MAX(version) FROM applet_versions WHERE applet_id = ?))`,
  );
  const ingestSkippedTx = sqlite.transaction((i: IngestInput, reason: string): Ingested => {
    const eventId = i.eventId ?? newId();
    if (insertEvent.run(eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, i.receivedAt, i.receivedAt).changes === 0) return null;
    const runId = newId();
    insertSkippedRun.run(runId, i.appletId, eventId, i.maxAttempts, reason, i.receivedAt, i.receivedAt, i.receivedAt, i.appletId);
    if (i.plan) applyPlan(i.plan);
    return { eventId, runId };
  });
  // Group commit. The fast path inserts the whole batch in one transaction; a row can only fail
  // when its applet was deleted a moment ago, and then the batch is redone with a savepoint per
  // row so that row fails alone. (A savepoint per row always would cost a third of the insert.)
  const ingestBatchTx = sqlite.transaction((items: IngestInput[]): Ingested[] => items.map(ingestRow));
  const ingestEachTx = sqlite.transaction((items: IngestInput[]): (Ingested | Error)[] =>
    items.map((i) => {
      try {
        return ingestTx(i);
      } catch (err) {
        return err instanceof Error ? err : new Error(String(err));
      }
    }),
  );

  return {
    ingestSkipped: (i: IngestInput, reason: string): Ingested => ingestSkippedTx(i, reason),
    ingest: (i: IngestInput) => ingestTx(i),

    /**
     * Group commit: many ingests, one commit, so the shared index pages are written once for the
     * whole batch instead of once per webhook. One failing row fails alone (its slot holds the Error).
     */
    ingestMany: (items: IngestInput[]): (Ingested | Error)[] => {
      try {
        return ingestBatchTx(items);
      } catch {
        // Rolled back as a whole: nothing of the batch is stored, so redoing it row by row is safe.
        return ingestEachTx(items);
      }
    },
  };
}
