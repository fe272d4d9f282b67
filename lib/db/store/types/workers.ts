/** Workers' leases and heartbeats. */
import type { workers } from "../sqlite/schema";

type WorkerColumns = typeof workers.$inferSelect;

export type WorkerRow = Omit<WorkerColumns, "updatedAt">;

export interface Heartbeat {
  id: string;
  hostname: string;
  pid: number;
  now: Date;
  leaseMs: number;
  fault: string | null;
  /** The port its SMTP receiver listens on; null (or absent) when it runs none. */
  smtpPort?: number | null;
  /** Its in-memory counters (lib/metrics `snapshot`), stored as given; null (or absent): none. */
  metrics?: string | null;
  /** The machine and pid namespace in which `pid` names it (lib/queue/liveness.ts); null (or absent): none said. */
  processScope?: string | null;
  /** PostgreSQL: the key of the session-level advisory lock it holds now; null (or absent): none. */
  sessionLock?: number | null;
}

/**
 * PostgreSQL: a session of the worker's own that holds a session-level advisory lock for the
 * worker's life. The server releases the lock the moment the session ends (the process was killed,
 * its host died), which another worker sees without waiting for the lease (lib/queue/liveness.ts).
 */
export interface LivenessSession {
  /** The lock's key while this session holds it; null while the session is down (it reconnects). */
  key(): number | null;
  /** Date.now() when this session last took its lock (held since without a break); null while down. */
  heldSince(): number | null;
  /** Which of `keys` no session holds now (the sessions that held them ended); null while this session is down. */
  free(keys: number[]): Promise<number[] | null>;
  close(): Promise<void>;
}

/** Worker leases (lib/queue/lease), read by `runs.recoverStale` and /api/health. */
export interface WorkersStore {
  /**
   * Renews (or first registers) the worker's lease (lease_until = now + leaseMs, seen_at, fault)
   * and sets `worker_heartbeat`'s last_run_at, in one transaction. Throws when it cannot be written.
   */
  heartbeat(h: Heartbeat): Promise<void>;
  /** A clean stop: the row goes, so nothing waits for the lease to expire. */
  remove(id: string): Promise<boolean>;
  /** Workers whose lease_until is after `now`, oldest (created_at, id) first. */
  live(now: Date): Promise<WorkerRow[]>;
  /** Drops rows whose lease ended before `before` and that no running run names; how many. */
  prune(before: Date): Promise<number>;
  /** PostgreSQL: opens the worker's liveness session (see LivenessSession); absent on SQLite. */
  openLivenessSession?(): LivenessSession;
}
