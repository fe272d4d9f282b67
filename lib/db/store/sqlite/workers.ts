import type { workers } from "./schema";
import type { Heartbeat, WorkerRow } from "../types";
import { toWorker } from "../worker-row";
import type { Sqlite } from "./client";
import type { RawRow } from "./rows";

type WorkerRowRaw = RawRow<typeof workers>;

/**
 * Worker leases (lib/queue/lease). A heartbeat writes the worker's row and the `worker_heartbeat`
 * job_locks row that /api/health and scripts/restore.sh read, in one transaction.
 */
export function createWorkersRepo(sqlite: Sqlite) {
  const upsert = sqlite.prepare(
    `INSERT INTO workers (id, hostname, pid, seen_at, lease_until, fault, smtp_port, metrics, process_scope, session_lock, created_at, updated_at)
     VALUES (@id, @hostname, @pid, @now, @leaseUntil, @fault, @smtpPort, @metrics, @processScope, @sessionLock, @now, @now)
     ON CONFLICT(id) DO UPDATE SET seen_at = excluded.seen_at, lease_until = excluded.lease_until,
       fault = excluded.fault, smtp_port = excluded.smtp_port, metrics = excluded.metrics,
       process_scope = excluded.process_scope, session_lock = excluded.session_lock, updated_at = excluded.updated_at`,
  );
  const beat = sqlite.prepare("UPDATE job_locks SET last_run_at = ? WHERE name = 'worker_heartbeat'");
  const remove = sqlite.prepare("DELETE FROM workers WHERE id = ?");
  const live = sqlite.prepare<[string], WorkerRowRaw>("SELECT * FROM workers WHERE lease_until > ? ORDER BY created_at, id");
  // Rows of workers long gone, kept a while for the diagnosis of a crash, then dropped. A row that
  // a running run still names stays: it says whose run it is until the run is recovered.
  const prune = sqlite.prepare(
    `DELETE FROM workers WHERE lease_until < ?
       AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status = 'running' AND r.locked_by = workers.id)`,
  );
  const heartbeatTx = sqlite.transaction((h: Heartbeat) => {
    const now = h.now.toISOString();
    upsert.run({ id: h.id, hostname: h.hostname, pid: h.pid, now, leaseUntil: new Date(h.now.getTime() + h.leaseMs).toISOString(), fault: h.fault, smtpPort: h.smtpPort ?? null, metrics: h.metrics ?? null, processScope: h.processScope ?? null, sessionLock: h.sessionLock ?? null });
    beat.run(now);
  });
  return {
    /** Renews (or first registers) the worker's lease; throws when the database cannot be written. */
    heartbeat: (h: Heartbeat): void => heartbeatTx(h),
    /** A clean stop: the lease ends now, so nothing waits for it to expire. */
    remove: (id: string): boolean => remove.run(id).changes === 1,
    /** Workers whose lease has not expired at `now`, oldest first. */
    live: (now: Date): WorkerRow[] =>
      live.all(now.toISOString()).map(toWorker),
    /** Drops the rows of workers whose lease ended before `before` and that no run still names. */
    prune: (before: Date): number => prune.run(before.toISOString()).changes,
  };
}
