import type { JobLocksStore } from "../types";
import { query, type Queryable } from "./pool";

export function jobLocksStore(q: Queryable): JobLocksStore {
  return {
    take: async (name, holder, now, ttlMs) =>
      (
        // An upsert: a lock per applet (a held connection, lib/listeners) has no row until its first take.
        await query(
          q,
          `INSERT INTO job_locks (name, locked_by, locked_at, expires_at) VALUES ($4, $1, $2, $3)
           ON CONFLICT (name) DO UPDATE SET locked_by = excluded.locked_by, locked_at = excluded.locked_at, expires_at = excluded.expires_at
           WHERE job_locks.locked_by IS NULL OR job_locks.expires_at < $2`,
          [holder, now.toISOString(), new Date(now.getTime() + ttlMs).toISOString(), name],
        )
      ).rowCount === 1,
    renew: async (name, holder, now, ttlMs) =>
      (await query(q, "UPDATE job_locks SET expires_at = $1 WHERE name = $2 AND locked_by = $3", [new Date(now.getTime() + ttlMs).toISOString(), name, holder])).rowCount === 1,
    release: async (name, holder, now) =>
      (await query(q, "UPDATE job_locks SET locked_by = NULL, locked_at = NULL, expires_at = NULL, last_run_at = $1 WHERE name = $2 AND locked_by = $3", [now.toISOString(), name, holder]))
        .rowCount === 1,
    heartbeat: async (name, now) => {
      await query(q, "UPDATE job_locks SET last_run_at = $1 WHERE name = $2", [now.toISOString(), name]);
    },
    get: async (name) => {
      const r = (
        await query<{ name: string; locked_by: string | null; locked_at: string | null; expires_at: string | null; last_run_at: string | null }>(q, "SELECT * FROM job_locks WHERE name = $1", [
          name,
        ])
      ).rows[0];
      return r ? { name: r.name, lockedBy: r.locked_by, lockedAt: r.locked_at, expiresAt: r.expires_at, lastRunAt: r.last_run_at } : null;
    },
  };
}
