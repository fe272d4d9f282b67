import { randomUUID } from "node:crypto";
import pg from "pg";
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

export interface PostgresScheduleStoreOptions {
  /** A pg Pool the host owns, or a connection string the store opens a pool for (and ends). */
  pool: pg.Pool | string;
  /** Default "schedules". Unquoted-identifier rules; created in the connection's search_path. */
  table?: string;
  clock?: ScheduleClock;
}

/**
 * PostgreSQL store on a pg Pool. Call `migrate()` once before use. Dates are BIGINT epoch
 * milliseconds rather than timestamptz: timestamptz keeps microseconds, JavaScript dates only
 * milliseconds, and equality in `claimDue` must hold for exactly the value that was read.
 */
export class PostgresScheduleStore implements ScheduleAdapter {
  readonly pool: pg.Pool;
  readonly table: string;
  readonly #ownsPool: boolean;
  readonly #now: () => Date;

  constructor(options: PostgresScheduleStoreOptions) {
    this.table = assertIdentifier("table name", options.table ?? "schedules");
    const clock = options.clock;
    this.#now = clock ? () => clock.now() : systemNow;
    if (typeof options.pool === "string") {
      this.pool = new pg.Pool({ connectionString: options.pool });
      // An idle client dropped by the server is emitted on the pool, and an unhandled 'error'
      // event would end the host process; the next query reports the failure instead.
      this.pool.on("error", () => undefined);
      this.#ownsPool = true;
    } else {
      this.pool = options.pool;
      this.#ownsPool = false;
    }
  }

  /** Creates the table and its due index if missing. Safe to run from several processes at once. */
  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    // pg-pool stops listening for the client's 'error' while it is checked out; a connection cut
    // now would end the host process. The statement in flight rejects with it, and that is thrown.
    const ignore = () => undefined;
    client.on("error", ignore);
    let failure: Error | undefined;
    try {
      await client.query("BEGIN");
      // Concurrent CREATE TABLE IF NOT EXISTS can still fail on the catalog's unique index; a
      // transaction-scoped advisory lock per table name serialises the migrations.
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`whenthen-schedules:${this.table}`]);
      await client.query(`
        CREATE TABLE IF NOT EXISTS "${this.table}" (
          id TEXT PRIMARY KEY,
          kind TEXT NOT NULL,
          target TEXT NOT NULL,
          interval_spec TEXT,
          cron_expr TEXT,
          time_zone TEXT,
          input_json TEXT,
          enabled BOOLEAN NOT NULL,
          next_run_at BIGINT NOT NULL,
          last_run_at BIGINT,
          last_run_status TEXT,
          last_run_id TEXT,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL,
          created_by TEXT
        )`);
      await client.query(`CREATE INDEX IF NOT EXISTS "${this.table}_due" ON "${this.table}" (enabled, next_run_at, id)`);
      await client.query("COMMIT");
    } catch (err) {
      failure = err as Error;
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.off("error", ignore);
      client.release(failure); // a client that failed (its connection cut, maybe) is dropped, not reused
    }
  }

  async add(schedule: Schedule): Promise<void> {
    const row = rowForAdd(schedule);
    const values = COLUMNS.map((c) => (c === "enabled" ? row.enabled === 1 : row[c]));
    try {
      await this.pool.query(`INSERT INTO "${this.table}" (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})`, values);
    } catch (err) {
      if (isPgError(err) && err.code === "23505") {
        throw new ScheduleConflictError(`schedules(postgres): a schedule with id ${JSON.stringify(schedule.id)} already exists`, { cause: err });
      }
      throw err;
    }
  }

  async get(id: string): Promise<Schedule | null> {
    const result = await this.pool.query<ScheduleRow>(`SELECT * FROM "${this.table}" WHERE id = $1`, [id]);
    const row = result.rows[0];
    return row ? fromRow(row) : null;
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    assertLimit(filter.limit);
    const kinds = kindList(filter.kind);
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.enabled !== undefined) {
      params.push(filter.enabled);
      where.push(`enabled = $${params.length}`);
    }
    if (filter.due) {
      params.push((filter.now ?? this.#now()).getTime());
      where.push(`next_run_at <= $${params.length}`);
    }
    if (kinds !== undefined) {
      if (kinds.length === 0) return [];
      params.push(kinds);
      where.push(`kind = ANY($${params.length}::text[])`);
    }
    let limit = "";
    if (filter.limit !== undefined) {
      params.push(filter.limit);
      limit = ` LIMIT $${params.length}`;
    }
    const result = await this.pool.query<ScheduleRow>(
      `SELECT * FROM "${this.table}"${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY next_run_at, id${limit}`,
      params,
    );
    return result.rows.map(fromRow);
  }

  async update(id: string, patch: SchedulePatch): Promise<boolean> {
    const columns = patchColumns(patch, this.#now());
    if (touchesTiming(patch)) {
      const current = await this.get(id);
      if (!current) return false;
      assertPatchedTiming(current, patch);
    }
    const values = columns.map(([c, v]) => (c === "enabled" ? v === 1 : v));
    const result = await this.pool.query(
      `UPDATE "${this.table}" SET ${columns.map(([c], i) => `${c} = $${i + 1}`).join(", ")} WHERE id = $${columns.length + 1}`,
      [...values, id],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.pool.query(`DELETE FROM "${this.table}" WHERE id = $1`, [id]);
    return (result.rowCount ?? 0) > 0;
  }

  async claimDue(id: string, expectedNextRunAt: Date, newNextRunAt: Date): Promise<boolean> {
    assertClaimDates(expectedNextRunAt, newNextRunAt);
    // Under READ COMMITTED a second UPDATE on the same row waits for the first to commit, then
    // re-checks the WHERE against the new row version: only one caller gets the row back.
    const result = await this.pool.query(
      `UPDATE "${this.table}" SET next_run_at = $1 WHERE id = $2 AND next_run_at = $3 AND enabled RETURNING id`,
      [newNextRunAt.getTime(), id, expectedNextRunAt.getTime()],
    );
    return result.rows.length === 1;
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
    await this.pool.query(`DROP TABLE IF EXISTS "${this.table}"`);
  }
}

function isPgError(err: unknown): err is Error & { code: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "string";
}
