import type { MaintenanceStore } from "../types";
import { query, queryDynamic, type Queryable } from "./pool";
import * as Q from "./queue-sql";

/** Retention on PostgreSQL: batched deletes; autovacuum hands the space back ("engine"). */
export function maintenanceStore(q: Queryable): MaintenanceStore {
  /** Rows of `runs` updated (not in place) or deleted, as the statistics counted them at this process's last vacuum. */
  let changesAtVacuum: number | null = null;
  return {
    deleteRunsBefore: async (before, limit) =>
      (
        await query(
          q,
          `DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE created_at < $1 AND status NOT IN ('queued', 'running', 'planned') LIMIT $2)`,
          [before, limit],
        )
      ).rowCount ?? 0,
    deleteEventsBefore: async (before, limit) =>
      (
        await query<{ id: string }>(
          q,
          `DELETE FROM events WHERE id IN (
             SELECT e.id FROM events e WHERE e.received_at < $1 AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.event_id = e.id) LIMIT $2)
           RETURNING id`,
          [before, limit],
        )
      ).rows.map((r) => r.id),
    spaceMode: async () => "engine",
    size: async () => {
      const r = (await query<{ bytes: string }>(q, "SELECT pg_database_size(current_database())::text AS bytes")).rows[0];
      return { bytes: Number(r?.bytes ?? 0), freeBytes: 0, pageSize: 8192 };
    },
    convertToIncremental: async () => undefined,
    reclaimStep: async () => undefined,
    vacuumQueue: async ({ minChanges }) => {
      const changes = Number((await query<{ n: string | null }>(q, Q.RUNS_CHANGES)).rows[0]?.n ?? 0);
      // The counters restart with the statistics (a reset, a crash): a smaller number is a change too.
      if (changesAtVacuum !== null && changes >= changesAtVacuum && changes - changesAtVacuum < minChanges) return { vacuumed: false, ms: 0 };
      const started = performance.now();
      await queryDynamic(q, Q.VACUUM_QUEUE);
      changesAtVacuum = changes;
      return { vacuumed: true, ms: performance.now() - started };
    },
  };
}
