/**
 * The better-sqlite3 store: the same Scheduler and RuleStore as /d1, over a better-sqlite3
 * Database adapted to D1's prepare/bind/batch shape so the SQL is shared, not written twice.
 * better-sqlite3 is synchronous; the adapter answers with settled promises, and `batch` runs in
 * one transaction as D1's does.
 */
import type { Database, Statement } from "better-sqlite3";
import { AUTOMATIONS_MIGRATION_STATEMENTS, SqlRuleStore, SqlScheduler, type SqlDatabase, type SqlResult, type SqlStatement } from "./sql";
import type { SchedulerOptions } from "./types";

export { AUTOMATIONS_MIGRATION_STATEMENTS, automationsMigrationSql, backoffMs, DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS } from "./sql";

type Bindable = number | string | bigint | Buffer | null;

function bindable(value: unknown): Bindable {
  // better-sqlite3 refuses booleans and undefined, which D1 accepts.
  if (value === undefined || value === null) return null;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number" || typeof value === "string" || typeof value === "bigint" || Buffer.isBuffer(value)) return value;
  return JSON.stringify(value);
}

export class SqliteStatement implements SqlStatement<SqliteStatement> {
  constructor(private readonly adapter: SqliteDatabase, readonly query: string, private readonly values: readonly Bindable[] = []) {}

  bind(...values: unknown[]): SqliteStatement {
    return new SqliteStatement(this.adapter, this.query, values.map(bindable));
  }

  /** Runs it now, synchronously: for use inside your own `db.transaction(() => …)`. */
  runSync<T = Record<string, unknown>>(): SqlResult<T> {
    const statement: Statement = this.adapter.statement(this.query);
    if (statement.reader) {
      const results = statement.all(...this.values) as T[];
      return { results, meta: { changes: statement.readonly ? 0 : results.length } };
    }
    const info = statement.run(...this.values);
    return { results: [], meta: { changes: info.changes } };
  }

  async all<T = Record<string, unknown>>(): Promise<SqlResult<T>> {
    return this.runSync<T>();
  }

  async run<T = Record<string, unknown>>(): Promise<SqlResult<T>> {
    return this.runSync<T>();
  }
}

/** A better-sqlite3 Database in D1's shape. Prepared statements are cached per SQL text. */
export class SqliteDatabase implements SqlDatabase<SqliteStatement> {
  private readonly cache = new Map<string, Statement>();

  constructor(readonly database: Database) {}

  statement(query: string): Statement {
    let statement = this.cache.get(query);
    if (!statement) {
      statement = this.database.prepare(query);
      this.cache.set(query, statement);
    }
    return statement;
  }

  prepare(query: string): SqliteStatement {
    return new SqliteStatement(this, query);
  }

  /** Runs the statements in one transaction (nested in yours, as a savepoint, if one is open). */
  batchSync<T = unknown>(statements: SqliteStatement[]): SqlResult<T>[] {
    return this.database.transaction(() => statements.map((s) => s.runSync<T>()))();
  }

  async batch<T = unknown>(statements: SqliteStatement[]): Promise<SqlResult<T>[]> {
    return this.batchSync<T>(statements);
  }
}

function adapt(db: Database | SqliteDatabase): SqliteDatabase {
  return db instanceof SqliteDatabase ? db : new SqliteDatabase(db);
}

export class SqliteScheduler extends SqlScheduler<SqliteStatement> {
  constructor(db: Database | SqliteDatabase, options: SchedulerOptions = {}) {
    super(adapt(db), options);
  }

  /** Runs writes from schedule / cancel / apply in one transaction. */
  write(statements: SqliteStatement[]): void {
    (this.db as SqliteDatabase).batchSync(statements);
  }
}

export class SqliteRuleStore extends SqlRuleStore<SqliteStatement> {
  constructor(db: Database | SqliteDatabase) {
    super(adapt(db));
  }
}

/** Applies the migration (idempotent) in one transaction. */
export function applyAutomationsMigration(db: Database): void {
  db.transaction(() => {
    for (const sql of AUTOMATIONS_MIGRATION_STATEMENTS) db.prepare(sql).run();
  })();
}
