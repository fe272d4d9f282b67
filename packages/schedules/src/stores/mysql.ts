import { randomUUID } from "node:crypto";
import mysql from "mysql2/promise";
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

export interface MysqlScheduleStoreOptions {
  /** A mysql2/promise pool the host owns, or a connection URL the store opens a pool for (and ends). */
  pool: mysql.Pool | string;
  /** Default "schedules". */
  table?: string;
  clock?: ScheduleClock;
}

type RowPacket = ScheduleRow & mysql.RowDataPacket;

/**
 * MySQL / MariaDB store on a mysql2/promise pool. Call `migrate()` once before use.
 *
 * Dates are BIGINT epoch milliseconds, not DATETIME: DATETIME without (3) silently rounds
 * (MySQL) or truncates (MariaDB) milliseconds, and DATETIME(3) is read back in the session time
 * zone, so the value `claimDue` compares could differ from the one `list` returned. An integer
 * compares exactly everywhere.
 */
export class MysqlScheduleStore implements ScheduleAdapter {
  readonly pool: mysql.Pool;
  readonly table: string;
  readonly #ownsPool: boolean;
  readonly #now: () => Date;

  constructor(options: MysqlScheduleStoreOptions) {
    this.table = assertIdentifier("table name", options.table ?? "schedules");
    const clock = options.clock;
    this.#now = clock ? () => clock.now() : systemNow;
    if (typeof options.pool === "string") {
      this.pool = mysql.createPool({ uri: options.pool, connectionLimit: 10 });
      this.#ownsPool = true;
    } else {
      this.pool = options.pool;
      this.#ownsPool = false;
    }
  }

  /** Creates the table (InnoDB, utf8mb4) with its due index if missing. */
  async migrate(): Promise<void> {
    // id/kind are VARCHAR(191): the longest utf8mb4 key prefix older InnoDB row formats index
    // (every store refuses longer ones, so they behave alike). Free text is TEXT: a long cron list
    // or run id is stored as in the other stores instead of failing with "Data too long".
    await this.pool.query(`
      CREATE TABLE IF NOT EXISTS \`${this.table}\` (
        id VARCHAR(191) NOT NULL PRIMARY KEY,
        kind VARCHAR(191) NOT NULL,
        target TEXT NOT NULL,
        interval_spec VARCHAR(64) NULL,
        cron_expr TEXT NULL,
        time_zone VARCHAR(64) NULL,
        input_json LONGTEXT NULL,
        enabled TINYINT(1) NOT NULL,
        next_run_at BIGINT NOT NULL,
        last_run_at BIGINT NULL,
        last_run_status TEXT NULL,
        last_run_id TEXT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        created_by TEXT NULL,
        INDEX \`${this.table}_due\` (enabled, next_run_at, id)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`);
  }

  async add(schedule: Schedule): Promise<void> {
    const row = rowForAdd(schedule);
    try {
      await this.pool.execute(
        `INSERT INTO \`${this.table}\` (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map(() => "?").join(", ")})`,
        COLUMNS.map((c) => row[c] as string | number | null),
      );
    } catch (err) {
      if (isMysqlError(err) && err.code === "ER_DUP_ENTRY") {
        throw new ScheduleConflictError(`schedules(mysql): a schedule with id ${JSON.stringify(schedule.id)} already exists`, { cause: err });
      }
      throw err;
    }
  }

  async get(id: string): Promise<Schedule | null> {
    const [rows] = await this.pool.execute<RowPacket[]>(`SELECT * FROM \`${this.table}\` WHERE id = ?`, [id]);
    const row = rows[0];
    return row ? fromRow(row) : null;
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    assertLimit(filter.limit);
    const kinds = kindList(filter.kind);
    const where: string[] = [];
    const params: Array<string | number> = [];
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
    // LIMIT is inlined (a checked integer): prepared LIMIT placeholders are rejected by some
    // MySQL 8 versions when sent as strings by execute().
    const limit = filter.limit !== undefined ? ` LIMIT ${filter.limit}` : "";
    const [rows] = await this.pool.execute<RowPacket[]>(
      `SELECT * FROM \`${this.table}\`${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY next_run_at, id${limit}`,
      params,
    );
    return rows.map(fromRow);
  }

  async update(id: string, patch: SchedulePatch): Promise<boolean> {
    const columns = patchColumns(patch, this.#now());
    if (touchesTiming(patch)) {
      const current = await this.get(id);
      if (!current) return false;
      assertPatchedTiming(current, patch);
    }
    const [result] = await this.pool.execute<mysql.ResultSetHeader>(
      `UPDATE \`${this.table}\` SET ${columns.map(([c]) => `${c} = ?`).join(", ")} WHERE id = ?`,
      [...columns.map(([, v]) => v), id],
    );
    // mysql2 connects with CLIENT_FOUND_ROWS, so affectedRows counts matched rows, not changed ones.
    return result.affectedRows > 0;
  }

  async delete(id: string): Promise<boolean> {
    const [result] = await this.pool.execute<mysql.ResultSetHeader>(`DELETE FROM \`${this.table}\` WHERE id = ?`, [id]);
    return result.affectedRows > 0;
  }

  async claimDue(id: string, expectedNextRunAt: Date, newNextRunAt: Date): Promise<boolean> {
    assertClaimDates(expectedNextRunAt, newNextRunAt);
    // InnoDB locks the row for the UPDATE and evaluates the WHERE on the latest committed version,
    // so of several concurrent callers exactly one matches.
    const [result] = await this.pool.execute<mysql.ResultSetHeader>(
      `UPDATE \`${this.table}\` SET next_run_at = ? WHERE id = ? AND next_run_at = ? AND enabled = 1`,
      [newNextRunAt.getTime(), id, expectedNextRunAt.getTime()],
    );
    return result.affectedRows === 1;
  }

  generateId(): string {
    return randomUUID();
  }

  async ping(): Promise<boolean> {
    try {
      await this.pool.query("SELECT 1");
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.#ownsPool) await this.pool.end();
  }

  /** Removes the table; for tests and uninstalls. */
  async drop(): Promise<void> {
    await this.pool.query(`DROP TABLE IF EXISTS \`${this.table}\``);
  }
}

function isMysqlError(err: unknown): err is Error & { code: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "string";
}
