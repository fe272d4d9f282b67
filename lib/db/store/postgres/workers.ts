import type { Heartbeat, WorkersStore } from "../types";
import { toWorker, type WorkerRaw } from "../worker-row";
import { query, type Begin, type Queryable } from "./pool";
import * as Q from "./queue-sql";

export function workersStore(q: Queryable, begin: Begin): WorkersStore {
  return {
    heartbeat: (h: Heartbeat) =>
      begin(async (c) => {
        const now = h.now.toISOString();
        await query(
          c,
          `INSERT INTO workers (id, hostname, pid, seen_at, lease_until, fault, smtp_port, metrics, process_scope, session_lock, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $4, $4)
           ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, lease_until = excluded.lease_until,
             fault = excluded.fault, smtp_port = excluded.smtp_port, metrics = excluded.metrics,
             process_scope = excluded.process_scope, session_lock = excluded.session_lock, updated_at = excluded.updated_at`,
          [h.id, h.hostname, h.pid, now, new Date(h.now.getTime() + h.leaseMs).toISOString(), h.fault, h.smtpPort ?? null, h.metrics ?? null, h.processScope ?? null, h.sessionLock ?? null],
        );
        await query(c, "UPDATE job_locks SET last_run_at = $1 WHERE name = 'worker_heartbeat'", [now]);
      }),
    remove: async (id) => (await query(q, "DELETE FROM workers WHERE id = $1", [id])).rowCount === 1,
    live: async (now) =>
      (await query<WorkerRaw>(q, "SELECT * FROM workers WHERE lease_until > $1 ORDER BY created_at, id", [now.toISOString()])).rows.map(toWorker),
    prune: async (before) =>
      (
        await query(
          q,
          Q.PRUNE_WORKERS,
          [before.toISOString()],
        )
      ).rowCount ?? 0,
  };
}
