import type { jobLocks } from "./schema";
import type { JobLock } from "../types";
import type { Sqlite } from "./client";
import type { RawRow } from "./rows";

/**
 * Named job locks (spec "Data model: job_locks"). Taking a lock is the one statement the spec gives;
 * zero rows changed means another instance holds it. Renew and release only touch a lock still held
 * by the caller.
 */
export function createJobLocksRepo(sqlite: Sqlite) {
  // An upsert: a lock per applet (a held connection, lib/listeners) has no row until its first take.
  const take = sqlite.prepare(
    `INSERT INTO job_locks (name, locked_by, locked_at, expires_at) VALUES (@name, @holder, @now, @expires)
     ON CONFLICT (name) DO UPDATE SET locked_by = excluded.locked_by, locked_at = excluded.locked_at, expires_at = excluded.expires_at
     WHERE job_locks.locked_by IS NULL OR job_locks.expires_at < @now`,
  );
  const renew = sqlite.prepare("UPDATE job_locks SET expires_at = ? WHERE name = ? AND locked_by = ?");
  const release = sqlite.prepare(
    "UPDATE job_locks SET locked_by = NULL, locked_at = NULL, expires_at = NULL, last_run_at = ? WHERE name = ? AND locked_by = ?",
  );
  const beat = sqlite.prepare("UPDATE job_locks SET last_run_at = ? WHERE name = ?");
  const get = sqlite.prepare<[string], RawRow<typeof jobLocks>>(
    "SELECT * FROM job_locks WHERE name = ?",
  );
  return {
    take: (name: string, holder: string, now: Date, ttlMs: number): boolean =>
      take.run({ name, holder, now: now.toISOString(), expires: new Date(now.getTime() + ttlMs).toISOString() }).changes === 1,
    renew: (name: string, holder: string, now: Date, ttlMs: number): boolean =>
      renew.run(new Date(now.getTime() + ttlMs).toISOString(), name, holder).changes === 1,
    release: (name: string, holder: string, now: Date): boolean => release.run(now.toISOString(), name, holder).changes === 1,
    /** The worker heartbeat: `/api/health` reads `last_run_at` of `worker_heartbeat`. */
    heartbeat: (name: string, now: Date): void => void beat.run(now.toISOString(), name),
    get: (name: string): JobLock | null => {
      const r = get.get(name);
      return r ? { name: r.name, lockedBy: r.locked_by, lockedAt: r.locked_at, expiresAt: r.expires_at, lastRunAt: r.last_run_at } : null;
    },
  };
}
