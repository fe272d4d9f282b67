import type { WorkerRow } from "./types";

/** A `workers` row as both engines hand it back (metrics as stored text). */
export interface WorkerRaw {
  id: string;
  hostname: string;
  pid: number;
  seen_at: string;
  lease_until: string;
  fault: string | null;
  smtp_port: number | null;
  metrics: string | null;
  process_scope: string | null;
  session_lock: number | null;
  created_at: string;
}

export const toWorker = (r: WorkerRaw): WorkerRow => ({
  id: r.id,
  hostname: r.hostname,
  pid: r.pid,
  seenAt: r.seen_at,
  leaseUntil: r.lease_until,
  fault: r.fault,
  smtpPort: r.smtp_port,
  metrics: r.metrics,
  processScope: r.process_scope,
  sessionLock: r.session_lock,
  createdAt: r.created_at,
});
