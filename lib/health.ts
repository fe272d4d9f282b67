import { statfsSync } from "node:fs";
import path from "node:path";
import type { Clock } from "./core/clock";
import type { AppConfig } from "./core/config";
import type { Store } from "./db/store";
import { errorMessage } from "./core/errors";

/**
 * The worker renews its lease (and this heartbeat) every third of WORKER_LEASE_SECONDS, at most
 * 15 s apart; older than this (WORKER_STALE_SECONDS, default 60) and the worker is taken to be stopped.
 */
export const HEARTBEAT_MAX_AGE_MS = 60_000;
const staleMsOf = (config: Pick<AppConfig, "workerStaleMs">): number => config.workerStaleMs ?? HEARTBEAT_MAX_AGE_MS;
/** Less free space than this where the database lives, and SQLite is about to refuse writes. */
export const DISK_LOW_BYTES = 1024 * 1024;

/** What the health check reads: the heartbeat and workers in the store, the clock, where the database lives. */
export interface HealthDeps {
  store: Pick<Store, "jobLocks" | "workers" | "runs">;
  clock: Clock;
  config: Pick<AppConfig, "workerStaleMs" | "databasePath" | "inboundEmail" | "smtpInboundPort">;
}

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
export async function checkHealth(app: HealthDeps): Promise<HealthReport> {
  const now = app.clock.now();
  const problems: string[] = [];
  let seen: string | null = null;
  try {
    seen = (await app.store.jobLocks.get("worker_heartbeat"))?.lastRunAt ?? null;
    if (seen === null) problems.push("worker: no heartbeat yet; the worker is not running");
    else {
      const age = now.getTime() - Date.parse(seen);
      if (age > staleMsOf(app.config)) problems.push(`worker: no heartbeat for ${Math.round(age / 1000)} s; it is not running, or cannot write to the database`);
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

/**
 * What the banner on every signed-in page says, null parts when all is well:
 * - `worker`: the heartbeat is older than WORKER_STALE_SECONDS (or there never was one), with how
 *   old it is and how many runs wait;
 * - `smtp`: the inbound SMTP receiver is configured (INBOUND_EMAIL is not false) but no live
 *   worker reports it listening (the worker that runs it is down, or it stopped listening). Left
 *   out while the worker banner shows: that one already says nothing runs.
 */
export interface HealthBanner {
  worker: { seenAt: string | null; ageMs: number | null; queued: number } | null;
  smtp: { port: number } | null;
}

export async function healthBanner(app: HealthDeps): Promise<HealthBanner> {
  const now = app.clock.now();
  const [beat, live] = await Promise.all([app.store.jobLocks.get("worker_heartbeat"), app.store.workers.live(now)]);
  const seenAt = beat?.lastRunAt ?? null;
  const ageMs = seenAt === null ? null : Math.max(0, now.getTime() - Date.parse(seenAt));
  if (ageMs === null || ageMs > staleMsOf(app.config)) {
    const { queued } = await app.store.runs.tally(now.toISOString(), now);
    return { worker: { seenAt, ageMs, queued: Number(queued) }, smtp: null };
  }
  const listening = live.some((w) => w.smtpPort !== null && w.smtpPort !== undefined);
  return { worker: null, smtp: app.config.inboundEmail && !listening ? { port: app.config.smtpInboundPort } : null };
}

/** Whether two banners say the same (the age aside, which the page counts up itself). */
export const sameBanner = (a: HealthBanner | null, b: HealthBanner | null): boolean =>
  JSON.stringify(a && { w: a.worker && a.worker.queued, s: a.smtp }) === JSON.stringify(b && { w: b.worker && b.worker.queued, s: b.smtp });
