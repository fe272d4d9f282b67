import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import { ScheduleConflictError } from "../errors";
import type { Schedule, ScheduleAdapter, ScheduleClock, ScheduleFilter, SchedulePatch } from "../types";
import {
  COLUMNS,
  type ScheduleRow,
  assertClaimDates,
  assertIdentifier,
  assertLimit,
  assertPatchedTiming,
  fromRow,
  kindList,
  patchColumns,
  rowForAdd,
  systemNow,
  touchesTiming,
} from "./shared";

export interface SqliteScheduleStoreOptions {
  /** A better-sqlite3 connection the host owns, or a file path the store opens (and closes). */
  database: Database.Database | string;
  /** Default "schedules". */
  table?: string;
  clock?: ScheduleClock;
}

/**
 * better-sqlite3 store. The table and its (enabled, next_run_at) index are created on
 * construction. A path opens the file in WAL with busy_timeout 5000 and synchronous=NORMAL, so
 * several processes (or connections) can share it; a connection passed in keeps the host's pragmas.
 * Dates are INTEGER epoch milliseconds, compared exactly.
 */
export class SqliteScheduleStore implements ScheduleAdapter {
  readonly db: Database.Database;
  readonly table: string;
  readonly #ownsDb: boolean;
  readonly #now: () => Date;
  readonly #insert: Database.Statement;
  readonly #get: Database.Statement<[string], ScheduleRow>;
  readonly #delete: Database.Statement<[string]>;
  readonly #claim: Database.Statement<[number, string, number]>;
  // Statements by SQL text: a filter or patch shape recurs on every tick, and preparing costs
  // about as much as running. The shapes are bounded by the filter/patch fields.
  readonly #listCache = new Map<string, Database.Statement<unknown[], ScheduleRow>>();
  readonly #updateCache = new Map<string, Database.Statement>();

  constructor(options: SqliteScheduleStoreOptions) {
    this.table = assertIdentifier("table name", options.table ?? "schedules");
    const clock = options.clock;
    this.#now = clock ? () => clock.now() : systemNow;
    if (typeof options.database === "string") {
      this.db = new Database(options.database);
      this.db.pragma("journal_mode = WAL");
      this.db.pragma("busy_timeout = 5000");
      this.db.pragma("synchronous = NORMAL");
      this.#ownsDb = true;
    } else {
      this.db = options.database;
      this.#ownsDb = false;
    }
    const t = `"${this.table}"`;
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS ${t} (
        id TEXT PRIMARY KEY NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        interval_spec TEXT,
        cron_expr TEXT,
        time_zone TEXT,
        input_json TEXT,
        enabled INTEGER NOT NULL,
        next_run_at INTEGER NOT NULL,
        last_run_at INTEGER,
        last_run_status TEXT,
        last_run_id TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        created_by TEXT
      );
      CREATE INDEX IF NOT EXISTS "${this.table}_due" ON ${t} (enabled, next_run_at, id);
    `);
    this.#insert = this.db.prepare(`INSERT INTO ${t} (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((c) => `@${c}`).join(", ")})`);
    this.#get = this.db.prepare<[string], ScheduleRow>(`SELECT * FROM ${t} WHERE id = ?`);
    this.#delete = this.db.prepare<[string]>(`DELETE FROM ${t} WHERE id = ?`);
    this.#claim = this.db.prepare<[number, string, number]>(`UPDATE ${t} SET next_run_at = ? WHERE id = ? AND next_run_at = ? AND enabled = 1`);
  }

  async add(schedule: Schedule): Promise<void> {
    const row = rowForAdd(schedule);
    try {
      this.#insert.run(row);
    } catch (err) {
      if (err instanceof Database.SqliteError && err.code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
        throw new ScheduleConflictError(`schedules(sqlite): a schedule with id ${JSON.stringify(schedule.id)} already exists`, { cause: err });
      }
      throw err;
    }
  }

  async get(id: string): Promise<Schedule | null> {
    const row = this.#get.get(id);
    return row ? fromRow(row) : null;
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    assertLimit(filter.limit);
    const kinds = kindList(filter.kind);
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.enabled !== undefined) {
      where.push("enabled = ?");
      params.push(filter.enabled ? 1 : 0);
    }
    if (filter.due) {
      where.push("next_run_at <= ?");
      params.push((filter.now ?? this.#now()).getTime());
    }
    if (kinds !== undefined) {
      if (kinds.length === 0) return [];
      where.push(`kind IN (${kinds.map(() => "?").join(", ")})`);
      params.push(...kinds);
    }
    if (filter.limit !== undefined) params.push(filter.limit);
    const sql = `SELECT * FROM "${this.table}"${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY next_run_at, id${filter.limit !== undefined ? " LIMIT ?" : ""}`;
    let statement = this.#listCache.get(sql);
    if (!statement) {
      statement = this.db.prepare<unknown[], ScheduleRow>(sql);
      this.#listCache.set(sql, statement);
    }
    return statement.all(...params).map(fromRow);
  }

  async update(id: string, patch: SchedulePatch): Promise<boolean> {
    const columns = patchColumns(patch, this.#now());
    if (touchesTiming(patch)) {
      const current = await this.get(id);
      if (!current) return false;
      assertPatchedTiming(current, patch);
    }
    const sql = `UPDATE "${this.table}" SET ${columns.map(([c]) => `${c} = ?`).join(", ")} WHERE id = ?`;
    let statement = this.#updateCache.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.#updateCache.set(sql, statement);
    }
    return statement.run(...columns.map(([, v]) => v), id).changes > 0;
  }

  async delete(id: string): Promise<boolean> {
    return this.#delete.run(id).changes > 0;
  }

  async claimDue(id: string, expectedNextRunAt: Date, newNextRunAt: Date): Promise<boolean> {
    assertClaimDates(expectedNextRunAt, newNextRunAt);
    // One statement: SQLite's single writer makes the compare and the write one step.
    return this.#claim.run(newNextRunAt.getTime(), id, expectedNextRunAt.getTime()).changes === 1;
  }

  generateId(): string {
    return randomUUID();
  }

  async ping(): Promise<boolean> {
    try {
      return this.db.open && this.db.prepare("SELECT 1 AS ok").get() !== undefined;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.#ownsDb && this.db.open) this.db.close();
  }
}
