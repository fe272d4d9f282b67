import { statfsSync } from "node:fs";
import path from "node:path";
import type { App } from "../app";
import { deleteEventFiles } from "../files/events";
import { newHolderId, withJobLock } from "./locks";

export const RETENTION_LOCK = "retention";
export const RETENTION_TTL_MS = 10 * 60_000;
const DAY_MS = 86_400_000;
/** Rows per delete transaction: each holds the write lock for tens of milliseconds. */
export const RETENTION_BATCH = 500;
/** Free pages handed back per incremental_vacuum step (1 MB at the default 4 KB page). */
const VACUUM_STEP_PAGES = 256;
/**
 * The pause between two of retention's write transactions. A writer that finds the lock taken
 * (a webhook in the web process) sleeps in SQLite's busy handler for up to 100 ms between tries;
 * with only a turn of the event loop between batches, retention took the lock back before the
 * webhook's next try, again and again: measured on 300,000 runs, webhooks waited up to 4.7 s while
 * no single statement held the lock longer than 373 ms, and at 1,000,000 some gave up after the
 * 5 s busy timeout. A gap longer than the busy handler's longest sleep lets every waiter in.
 */
export const RETENTION_PAUSE_MS = 110;
/**
 * A database made before auto_vacuum was set is converted with one VACUUM, which holds the write
 * lock while it rewrites the file: only up to this size (measured here: ~100 MB/s, bench/RESULTS.md
 * growth), so webhooks wait at most about as long as their busy timeout. A larger one is left to
 * the operator (README "Disk space"), with a warning.
 */
export const CONVERT_MAX_BYTES = 256 * 2 ** 20;

export interface RetentionResult {
  /** false: another instance holds the retention lock. */
  ran: boolean;
  /** Events deleted (their attachments went with them). */
  deletedEvents: number;
  /** The cut-off: everything older was eligible. */
  before: string | null;
  /** Bytes the database file shrank by (incremental vacuum, or the one-time conversion). */
  reclaimedBytes: number;
}


/**
 * Deletes runs and events older than RUN_RETENTION_DAYS, and the attachments of the
 * deleted events, under the `retention` job lock (TTL 10 minutes), then returns the freed pages to
 * the file system so the file shrinks instead of only growing. Runs still queued or running are
 * kept, and so is an event one of them needs.
 */
export async function runRetention(
  app: Pick<App, "store" | "clock" | "log" | "config">,
  now: Date = app.clock.now(),
  opts: { holder?: string; /** Real time between write transactions (tests: 0). */ pauseMs?: number } = {},
): Promise<RetentionResult> {
  const pauseMs = opts.pauseMs ?? RETENTION_PAUSE_MS;
  const pause = () => new Promise<void>((resolve) => (pauseMs > 0 ? setTimeout(resolve, pauseMs) : setImmediate(resolve)));
  const log = app.log.child("retention");
  const maintenance = app.store.maintenance;
  const before = new Date(now.getTime() - app.config.runRetentionDays * DAY_MS).toISOString();
  const result = await withJobLock(app, RETENTION_LOCK, opts.holder ?? newHolderId(), RETENTION_TTL_MS, now, async (lock) => {
    while (!lock.lost() && (await maintenance.deleteRunsBefore(before, RETENTION_BATCH)) > 0) await pause();
    // Alerts that are done are kept as long as runs.
    while (!lock.lost() && (await app.store.alerts.deleteBefore(before, RETENTION_BATCH)) > 0) await pause();
    // The fire ledger's stored rows go with the same window (a run's own row goes with the run).
    while (!lock.lost() && (await app.store.fires.deleteBefore(before, RETENTION_BATCH)) > 0) await pause();
    // Timed actions: finished planned runs and old subject versions go with the same window.
    if (!lock.lost()) await app.store.plannedRuns.purgeFinished(Date.parse(before));
    let deleted = 0;
    for (;;) {
      if (lock.lost()) break;
      const ids = await maintenance.deleteEventsBefore(before, RETENTION_BATCH);
      deleted += ids.length;
      // Files that cannot be removed (a legacy folder with a permission problem) must not keep
      // the events from going: logged, and the next hour's run does not see these ids again.
      await deleteEventFiles(app, ids).catch((err: unknown) =>
        log.warn("could not delete the events' files", { events: ids.length, error: err instanceof Error ? err.message : String(err) }),
      );
      if (ids.length < RETENTION_BATCH) break;
      await pause();
    }
    if (deleted) log.info("deleted old runs and events", { events: deleted, before });
    return { deleted, reclaimed: await reclaimSpace(app, lock, pause) };
  });
  return result.ran
    ? { ran: true, deletedEvents: result.value.deleted, before, reclaimedBytes: result.value.reclaimed }
    : { ran: false, deletedEvents: 0, before: null, reclaimedBytes: 0 };
}

let warnedTooLarge = false;

/** Hands free pages back in small steps; converts a database without auto_vacuum once when it is small enough. */
async function reclaimSpace(app: Pick<App, "store" | "log" | "config">, lock: { lost: () => boolean }, pause: () => Promise<void>): Promise<number> {
  const log = app.log.child("retention");
  const maintenance = app.store.maintenance;
  const start = await maintenance.size();
  const mode = await maintenance.spaceMode();
  if (mode === "incremental") {
    let free = start.freeBytes;
    while (free > 0 && !lock.lost()) {
      await maintenance.reclaimStep(VACUUM_STEP_PAGES);
      const now = (await maintenance.size()).freeBytes;
      if (now >= free) break;
      free = now;
      await pause();
    }
  } else if (mode === "none") {
    const mb = (b: number) => Math.round(b / 2 ** 20);
    const available = availableBytes(app.config.databasePath);
    if (start.bytes <= CONVERT_MAX_BYTES && available >= 2 * start.bytes) {
      log.info("switching the database to incremental auto-vacuum (one VACUUM, once)", { size_mb: mb(start.bytes) });
      await maintenance.convertToIncremental();
    } else if (!warnedTooLarge) {
      warnedTooLarge = true;
      log.warn("the database does not return the space retention frees; convert it once with the app stopped (README, Disk space)", {
        size_mb: mb(start.bytes),
        free_mb: mb(start.freeBytes),
        disk_available_mb: mb(available),
      });
    }
  }
  const reclaimed = start.bytes - (await maintenance.size()).bytes;
  if (reclaimed > 0) log.info("returned free space to the file system", { mb: Math.round(reclaimed / 2 ** 20) });
  return reclaimed;
}

function availableBytes(databasePath: string): number {
  try {
    const s = statfsSync(path.dirname(databasePath));
    return s.bavail * s.bsize;
  } catch {
    return 0;
  }
}
