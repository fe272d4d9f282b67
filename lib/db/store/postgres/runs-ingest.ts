import { newId } from "../../../core/ids";
import type { Ingested, IngestInput, RunsStore } from "../types";
import { applyPlanOn } from "./planned-runs";
import { query, sqlState, type Begin, type Queryable } from "./pool";
import { ingestControlled } from "./run-controls";
import * as Q from "./queue-sql";

/** One event and its run in one statement (Q.INGEST); null when the event was already stored (its dedupe key or id: ON CONFLICT DO NOTHING). */
async function ingestRow(c: Queryable, i: IngestInput): Promise<Ingested> {
  const eventId = i.eventId ?? newId();
  const runId = newId();
  const r = await query(c, Q.INGEST, [eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, runId, i.maxAttempts]);
  return r.rowCount === 1 ? { eventId, runId } : null;
}

/** Events in: one, a batch (group commit), or one recorded as skipped. */
export function runsIngest(q: Queryable, begin: Begin): Pick<RunsStore, "ingest" | "ingestSkipped" | "ingestMany"> {
  // Timed actions: the plan goes in the event's transaction, only when the event was stored.
  const ingestOne = async (c: Queryable, i: IngestInput): Promise<Ingested> => {
    if (i.controls) {
      const controlled = (tx: Queryable) => ingestControlled(tx, i, async (tx2) => void (await applyPlanOn(tx2, i.plan!)));
      return c === q ? begin(controlled) : controlled(c);
    }
    const plan = i.plan;
    if (!plan) return ingestRow(c, i);
    const run = async (tx: Queryable) => {
      const r = await ingestRow(tx, i);
      if (r) await applyPlanOn(tx, plan);
      return r;
    };
    return c === q ? begin(run) : run(c);
  };

  /**
   * After a batch failed on a row whose applet is gone (23503) or that collided (23505): each row
   * again in a transaction of its own, so that row fails alone; any other error is the batch's.
   */
  const rowByRow = async (err: unknown, items: IngestInput[]): Promise<(Ingested | Error)[]> => {
    if (sqlState(err) !== "23503" && sqlState(err) !== "23505") throw err;
    const out: (Ingested | Error)[] = [];
    for (const i of items) {
      try {
        out.push(await begin((c) => ingestOne(c, i)));
      } catch (e) {
        out.push(e instanceof Error ? e : new Error(String(e)));
      }
    }
    return out;
  };

  /**
   * A batch with timed plans: one transaction, row by row (a plan is several statements); a row
   * whose applet is gone makes the batch redo row by row, each in its own transaction, so it fails alone.
   */
  const ingestPlanned = async (items: IngestInput[]): Promise<(Ingested | Error)[]> => {
    try {
      return await begin(async (c) => {
        const out: Ingested[] = [];
        for (const i of items) out.push(await ingestOne(c, i));
        return out;
      });
    } catch (err) {
      return rowByRow(err, items);
    }
  };

  return {
    ingest: (i) => ingestOne(q, i),

    ingestSkipped: (i, reason) => begin(async (c) => {
      const eventId = i.eventId ?? newId();
      const runId = newId();
      const r = await query(
        c,
        `WITH e AS (
           INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5::json, $6, $6, $6) ON CONFLICT DO NOTHING RETURNING id
         )
         INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, error, finished_at, created_at, updated_at, applet_version)
         SELECT $7, $2, e.id, 'skipped', 1, $8, NULL, '[]', $9, $6, $6, $6, (SELECT MAX(v.version) FROM applet_versions v WHERE v.applet_id = $2) FROM e
         RETURNING id`,
        [eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, runId, i.maxAttempts, reason],
      );
      if (r.rowCount === 1 && i.plan) await applyPlanOn(c, i.plan);
      return r.rowCount === 1 ? { eventId, runId } : null;
    }),

    ingestMany: async (items) => {
      if (items.length === 0) return [];
      if (items.some((i) => i.plan || i.controls)) return ingestPlanned(items);
      const ids = items.map((i) => ({ eventId: i.eventId ?? newId(), runId: newId() }));
      // Group commit: the whole batch in one statement. A row can only fail when its applet was
      // deleted a moment ago; then the batch is redone row by row so that row fails alone.
      try {
        const r = await query<{ event_id: string }>(q, Q.INGEST_MANY, [
          ids.map((x) => x.eventId),
          items.map((i) => i.appletId),
          items.map((i) => i.source),
          items.map((i) => i.dedupeKey),
          items.map((i) => i.payloadJson),
          items.map((i) => i.receivedAt),
          ids.map((x) => x.runId),
          items.map((i) => i.maxAttempts),
        ]);
        const inserted = new Set(r.rows.map((row) => row.event_id));
        return ids.map((x) => (inserted.has(x.eventId) ? x : null));
      } catch (err) {
        return rowByRow(err, items);
      }
    },
  };
}
