/** Named jobs' locks (one holder at a time across processes). */
import type { jobLocks } from "../sqlite/schema";

type JobLockColumns = typeof jobLocks.$inferSelect;

export type JobLock = JobLockColumns;

/**
 * Named job locks (spec "Data model: job_locks"; rows `scheduler_tick`, `retention`,
 * `worker_heartbeat` exist after migration; any other name gets its row on its first take).
 * Taking is one conditional upsert; renew and release only touch a lock still held by `holder`.
 */
export interface JobLocksStore {
  /** Takes the lock when free or expired (expires_at < now): true for exactly one caller. */
  take(name: string, holder: string, now: Date, ttlMs: number): Promise<boolean>;
  /** Extends expires_at to now + ttl; false when `holder` no longer holds it. */
  renew(name: string, holder: string, now: Date, ttlMs: number): Promise<boolean>;
  /** Frees it and records last_run_at = now; false when `holder` no longer holds it. */
  release(name: string, holder: string, now: Date): Promise<boolean>;
  /** Sets last_run_at = now without locking (the worker heartbeat). */
  heartbeat(name: string, now: Date): Promise<void>;
  get(name: string): Promise<JobLock | null>;
}
