import Database from "better-sqlite3";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";

export type Sqlite = Database.Database;

/**
 * The open database. The repos use better-sqlite3's prepared statements directly (DESIGN.md: the
 * hot paths); lib/db/store/sqlite/schema.ts is drizzle-kit's source for the migrations, so drizzle-orm is not
 * loaded at run time (it cost each process ~14 MB of RSS for a handle nothing used).
 */
export interface DbHandle {
  sqlite: Sqlite;
  close(): void;
}

export interface OpenOptions {
  synchronous?: "NORMAL" | "FULL";
  /** Folder of generated migrations (drizzle-kit). Default ./drizzle under the working directory. */
  migrationsDir?: string;
  readonly?: boolean;
  /**
   * WAL pages before this connection checkpoints on commit (SQLite's default is 1000). The web
   * process sets it high so the checkpoint, which copies pages back and syncs the file, happens in
   * the worker and not inside a webhook's acknowledgement. Measured here: 5,500 → 7,400+ webhooks/s
   * and p99 24 → 16 ms with the worker draining.
   */
  walAutocheckpoint?: number;
}

/**
 * What a WAL file is cut back to after it starts over (SQLite's journal_size_limit). Not smaller
 * than what the checkpoints (8 MB in the web process's thread, 1,000 pages in the worker's
 * commits) let it reach: a file cut to 4 MB after every checkpoint had to grow again at once,
 * and those extending writes, beside the checkpoint's fsync, blocked the writer (on this
 * machine's ext4 disk; not on tmpfs). Measured (`pnpm bench webhook`, same hour, same machine):
 * webhook ingest 54–62 → 72–77 % of the baseline, p99 66–124 → 34–35 ms, web event-loop delay
 * p99 49–102 → 26–27 ms; the store's group commit alone 141–145 → 106–112 µs of wall time per
 * webhook (batches of 30 over 20 applets).
 */
export const JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * The named jobs of the spec, and the queue's vacuum (lib/queue/vacuum.ts: PostgreSQL's, listed on
 * both engines as every job is); one row each so a lock is always a single UPDATE.
 */
export const JOB_NAMES = ["scheduler_tick", "retention", "worker_heartbeat", "alerts", "queue_vacuum"] as const;

/**
 * Opens the SQLite file in WAL mode and brings its schema up to date. Both processes call this at
 * start; migrations are applied under BEGIN IMMEDIATE, so two processes starting at once apply
 * each migration exactly once.
 */
export function openDatabase(file: string, opts: OpenOptions = {}): DbHandle {
  mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new Database(file, { readonly: opts.readonly ?? false });
  sqlite.pragma("busy_timeout = 5000");
  if (!opts.readonly) {
    // Before the first table exists, so a new database returns the space retention frees
    // (lib/tick/retention.ts runs incremental_vacuum). An existing file keeps its mode until
    // retention converts it once; a PRAGMA alone cannot change it after tables exist. Only a new
    // file is asked: on an existing one the PRAGMA writes, and a full disk then refuses the open.
    if (sqlite.prepare("SELECT 1 FROM sqlite_master LIMIT 1").get() === undefined) sqlite.pragma("auto_vacuum = INCREMENTAL");
    sqlite.pragma("journal_mode = WAL");
    sqlite.pragma(`synchronous = ${opts.synchronous ?? "NORMAL"}`);
    if (opts.walAutocheckpoint !== undefined) sqlite.pragma(`wal_autocheckpoint = ${Math.max(0, Math.floor(opts.walAutocheckpoint))}`);
    // Once a checkpoint has copied every frame, the next writer starts the WAL over and cuts the
    // file down to this: a burst does not keep its disk space for good (./checkpoint.ts).
    sqlite.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`);
    sqlite.pragma("foreign_keys = ON");
    migrate(sqlite, opts.migrationsDir ?? defaultMigrationsDir());
  }
  return { sqlite, close: () => sqlite.close() };
}

export function defaultMigrationsDir(): string {
  return path.resolve(process.env.MIGRATIONS_DIR || path.join(process.cwd(), "drizzle"));
}

interface Journal {
  entries: { idx: number; tag: string }[];
}

function migrate(sqlite: Sqlite, dir: string): void {
  const journal = JSON.parse(readFileSync(path.join(dir, "meta", "_journal.json"), "utf8")) as Journal;
  sqlite.exec("CREATE TABLE IF NOT EXISTS _migrations (tag TEXT PRIMARY KEY, applied_at TEXT NOT NULL)");
  const applied = sqlite.prepare("SELECT 1 FROM _migrations WHERE tag = ?");
  const record = sqlite.prepare("INSERT INTO _migrations (tag, applied_at) VALUES (?, ?)");
  const apply = sqlite.transaction((tag: string) => {
    if (applied.get(tag)) return;
    const text = readFileSync(path.join(dir, `${tag}.sql`), "utf8");
    for (const statement of text.split("--> statement-breakpoint")) {
      if (statement.trim()) sqlite.exec(statement);
    }
    record.run(tag, new Date().toISOString());
  });
  for (const entry of [...journal.entries].sort((a, b) => a.idx - b.idx)) apply.immediate(entry.tag);
  const seedLock = sqlite.prepare("INSERT OR IGNORE INTO job_locks (name) VALUES (?)");
  for (const name of JOB_NAMES) seedLock.run(name);
}
