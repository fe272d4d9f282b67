import type { SpaceMode } from "../types";
import type { Sqlite } from "./client";

const MODES: SpaceMode[] = ["none", "full", "incremental"];

/**
 * Retention and space: deleting old runs and events in small transactions (one big DELETE of a
 * million rows held the write lock for seconds, longer than a webhook waits for it), and handing
 * freed pages back to the file system with SQLite's incremental vacuum.
 */
export function createMaintenanceRepo(sqlite: Sqlite) {
  const deleteRuns = sqlite.prepare<[string, number]>(
    `DELETE FROM runs WHERE rowid IN (
       SELECT rowid FROM runs WHERE created_at < ? AND status NOT IN ('queued', 'running', 'planned') LIMIT ?)`,
  );
  // An event one of whose runs is still kept (queued, running, or newer) stays.
  const deleteEvents = sqlite.prepare<[string, number], { id: string }>(
    `DELETE FROM events WHERE rowid IN (
       SELECT rowid FROM events WHERE received_at < ? AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.event_id = events.id) LIMIT ?)
     RETURNING id`,
  );
  const num = (name: string) => sqlite.pragma(name, { simple: true }) as number;
  return {
    /** Deletes at most `limit` finished runs created before `before`; returns how many. */
    deleteRunsBefore: (before: string, limit: number): number => deleteRuns.run(before, limit).changes,
    /** Deletes at most `limit` events received before `before` that no run needs; returns their ids. */
    deleteEventsBefore: (before: string, limit: number): string[] => deleteEvents.all(before, limit).map((r) => r.id),
    spaceMode: (): SpaceMode => MODES[num("auto_vacuum")] ?? "none",
    /**
     * Switches an existing database to incremental auto-vacuum. SQLite applies the change only
     * with a full VACUUM, which rewrites the file (needs free space about its size) and holds the
     * write lock meanwhile.
     */
    convertToIncremental: (): void => {
      sqlite.pragma("auto_vacuum = INCREMENTAL");
      sqlite.exec("VACUUM");
    },
    /** Bytes of the database file (pages × page size) and of its free pages. */
    size: (): { bytes: number; freeBytes: number; pageSize: number } => {
      const pageSize = num("page_size");
      return { bytes: num("page_count") * pageSize, freeBytes: num("freelist_count") * pageSize, pageSize };
    },
    /** Returns up to `pages` free pages to the file system (the file shrinks); one short write transaction. */
    reclaimStep: (pages: number): void => void sqlite.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`),
  };
}
