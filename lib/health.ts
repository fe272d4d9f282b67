import { statfsSync } from "node:fs";
import path from "node:path";
import type { App } from "./app";
import { errorMessage } from "./core/errors";

/** The worker renews its lease (and this heartbeat) every third of WORKER_LEASE_SECONDS, at most 15 s apart. */
export const HEARTBEAT_MAX_AGE_MS = 60_000;
/** Less free space than this where the database lives, and SQLite is about to refuse writes. */
export const DISK_LOW_BYTES = 1024 * 1024;

export interface HealthReport {
  /** false: something below is wrong; /api/health answers 503. */
  ok: boolean;
  /** The latest worker heartbeat, or null when no worker has run yet. */
  worker_seen_at: string | null;
  /** What is wrong, one line each, in the user's words; empty when ok. */
  problems: string[];
}

/**
 * Whether the system can do its work: a worker is alive (its heartbeat is fresh), no live worker
 * reports a fault (what it could not do at its last heartbeat), and the disk that holds the
 * database has room. A worker on a full disk often cannot write its heartbeat at all; then the stale
 * heartbeat and the disk check say so together. Read by /api/health and the Settings page.
 */
export async function checkHealth(app: Pick<App, "store" | "clock" | "config">): Promise<HealthReport> {
  const now = app.clock.now();
  const problems: string[] = [];
  let seen: string | null = null;
  try {
    seen = (await app.store.jobLocks.get("worker_heartbeat"))?.lastRunAt ?? null;
    if (seen === null) problems.push("worker: no heartbeat yet; the worker is not running");
    else {
      const age = now.getTime() - Date.parse(seen);
      if (age > HEARTBEAT_MAX_AGE_MS) problems.push(`worker: no heartbeat for ${Math.round(age / 1000)} s; it is not running, or cannot write to the database`);
    }
    for (const w of await app.store.workers.live(now)) {
      if (w.fault) problems.push(`worker ${w.id}: ${w.fault}`);
    }
  } catch (err) {
    problems.push(`database: cannot be read: ${errorMessage(err)}`);
  }
  const dir = path.dirname(app.config.databasePath);
  try {
    const fs = statfsSync(dir);
    const free = fs.bavail * fs.bsize;
    if (free < DISK_LOW_BYTES) problems.push(`disk: ${formatBytes(free)} free where the database is (${dir}); webhooks and runs cannot be stored until space is freed`);
  } catch {
    // statfs is not available everywhere (some network filesystems); the checks above still stand.
  }
  return { ok: problems.length === 0, worker_seen_at: seen, problems };
}

const formatBytes = (n: number): string => (n < 1024 ? `${n} bytes` : `${Math.floor(n / 1024)} KB`);
