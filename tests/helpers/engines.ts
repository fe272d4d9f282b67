import { describe } from "vitest";
import { alertPolicy } from "@/lib/alerts/policy";
import { sqliteOf, openSqliteStore } from "@/lib/db/store/sqlite";
import type { Store } from "@/lib/db/store";
import path from "node:path";
import { postgresEngine, postgresTestSql } from "./postgres";

/**
 * The database engines the store-backed test suites run on. SQLite always; PostgreSQL when
 * `TEST_POSTGRES_URL` is set (tests/helpers/postgres.ts), each skipped with its reason.
 *
 * An engine opens a fresh, empty, migrated store for one test app (SQLite: a file in the test's
 * DATA_DIR; PostgreSQL: a schema of its own), and gives raw SQL for the few assertions no store
 * method answers (`testSql`). That SQL is written once in the subset both dialects share, with `?`
 * placeholders; an engine translates what it must. Rows come back as the driver gives them: tests
 * compare counts with Number() and parse JSON columns only when they are text.
 */
export interface TestEngine {
  /** "sqlite" | "postgres": in every test name the suite runs under it. */
  name: string;
  /** Why this engine cannot run here (for `describe.skipIf`), or null. */
  skip: string | null;
  /**
   * A fresh store for one test app in `dataDir` (the app's DATA_DIR, removed by the test).
   * Synchronous (createTestApp is): an engine that needs I/O to prepare (migrations) does it on
   * first use inside the store.
   */
  open(dataDir: string): Store;
  /** A second, independent connection to the database of `store` (a second worker process's). */
  peer(store: Store): Store;
  /** The DATABASE_URL a worker process (tests/helpers/processes.ts) opens the database of `store` with. */
  databaseUrl(store: Store): string;
}

/** Raw SQL on a test store, for assertions and for putting rows in states no store method makes. */
export interface TestSql {
  get<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T | undefined>;
  all<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** Resolves with the number of rows changed. */
  run(sql: string, ...params: unknown[]): Promise<number>;
}

/** Raw SQL on the app's store, whatever its engine. */
export function testSql(store: Store): TestSql {
  // PostgreSQL answers through its own pool; any other store is SQLite's one connection.
  const registered = postgresTestSql(store);
  if (registered) return registered;
  const db = sqliteOf(store);
  return {
    get: async <T>(sql: string, ...params: unknown[]) => db.prepare<unknown[], T>(sql).get(...params),
    all: async <T>(sql: string, ...params: unknown[]) => db.prepare<unknown[], T>(sql).all(...params),
    run: async (sql: string, ...params: unknown[]) => db.prepare(sql).run(...params).changes,
  };
}

export const sqliteEngine: TestEngine = {
  name: "sqlite",
  skip: null,
  open: (dataDir) => openSqliteStore({ file: path.join(dataDir, "app.db"), alertPolicy }),
  peer: (store) => openSqliteStore({ file: sqliteOf(store).name, alertPolicy }),
  databaseUrl: (store) => `file:${sqliteOf(store).name}`,
};

/** SQLite, then PostgreSQL (skipped with its reason when it cannot run here). */
export const engines: TestEngine[] = [sqliteEngine, postgresEngine()];

/** Runs `suite` once per engine, inside `describe("<engine>", …)`; a skipped engine says why. */
export function forEachEngine(suite: (engine: TestEngine) => void): void {
  for (const engine of engines) {
    describe.skipIf(engine.skip !== null)(`${engine.name}${engine.skip ? ` (skipped: ${engine.skip})` : ""}`, () => suite(engine));
  }
}
