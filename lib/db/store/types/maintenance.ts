/** Retention and the space it frees. */
/** How the engine hands freed space back to the file system (retention, lib/tick/retention). */
export type SpaceMode =
  /** SQLite without auto_vacuum: freed pages stay in the file until a one-time conversion. */
  | "none"
  /** SQLite with auto_vacuum = FULL: every commit returns pages; nothing to do. */
  | "full"
  /** SQLite with auto_vacuum = INCREMENTAL: `reclaimStep` returns pages in small steps. */
  | "incremental"
  /** The engine manages space itself (PostgreSQL autovacuum): retention only deletes rows. */
  | "engine";

/** Retention and space (lib/tick/retention), in small transactions that never hold the write lock long. */
export interface MaintenanceStore {
  /** Deletes at most `limit` finished (not queued/running) runs created before `before`; how many. */
  deleteRunsBefore(before: string, limit: number): Promise<number>;
  /** Deletes at most `limit` events received before `before` that no run references; their ids. */
  deleteEventsBefore(before: string, limit: number): Promise<string[]>;
  spaceMode(): Promise<SpaceMode>;
  /** Bytes of the database and of its free space (0 where the engine does not say). */
  size(): Promise<{ bytes: number; freeBytes: number; pageSize: number }>;
  /** Mode `none` only: switch to incremental (SQLite: one VACUUM; needs free disk about the file's size). */
  convertToIncremental(): Promise<void>;
  /** Mode `incremental` only: return up to `pages` free pages to the file system, one short write. */
  reclaimStep(pages: number): Promise<void>;
  /**
   * PostgreSQL: a run that leaves the queue (claimed, then finished) leaves entries in the queue's
   * partial indexes that point at row versions no one can see any more, and every claim's walk in
   * due order reads past them until VACUUM removes them. Autovacuum comes by rarely on a table with
   * a long history (20 % of its rows must have changed), and then skips the indexes while few heap
   * pages hold dead rows. This vacuums `runs`, indexes included, when at least `minChanges` rows
   * changed or went since this process last did; `ms`: how long it took. Absent where index entries
   * go with their rows (SQLite).
   */
  vacuumQueue?(opts: { minChanges: number }): Promise<{ vacuumed: boolean; ms: number }>;
}
