import { randomBytes } from "node:crypto";
import pg from "pg";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from "@/lib/db/store/postgres";
import type { Store } from "@/lib/db/store";
import type { TestEngine, TestSql } from "./engines";

/**
 * The one place tests reach PostgreSQL: the server (TEST_POSTGRES_URL; unset, every PostgreSQL
 * test skips with the reason below), a fresh schema per test (or file), and the stores opened on
 * it. Schemas keep parallel test files (and other checkouts on the same server) apart without a
 * database each.
 */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL || "";
export const noPostgres = TEST_POSTGRES_URL ? null : "TEST_POSTGRES_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test): PostgreSQL tests skipped";

/** A schema name no other test uses. */
const freshSchema = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;

/** `url` (TEST_POSTGRES_URL by default) with `schema` as its search_path: what a child process's DATABASE_URL names. */
export function urlWithSchema(schema: string, url = TEST_POSTGRES_URL): string {
  return `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/**
 * A fresh, empty schema in the test database, for tests whose processes open it themselves: the
 * app's tables are created there by the store's own migrations, and `drop()` removes it with
 * everything in it.
 */
export async function createTestSchema(prefix = "t"): Promise<{ schema: string; drop(): Promise<void> }> {
  const schema = freshSchema(prefix);
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  return {
    schema,
    drop: async () => {
      const c = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    },
  };
}

/**
 * A migrated PostgreSQL store on a schema of its own (`ownSchema`: the store creates it before
 * migrating and drops it when it closes), synchronous like createTestApp; `peer` is another
 * process's pool on the same schema.
 */
function openTestStore(opts: Partial<PostgresStoreOptions> & { schema: string; own: boolean }): PostgresStore {
  if (!TEST_POSTGRES_URL) throw new Error(`tests: ${noPostgres}`);
  const { own, ...rest } = opts;
  return openPostgresStore({ url: TEST_POSTGRES_URL, ownSchema: own, alertPolicy, ...rest });
}

/** A PostgreSQL store on a fresh schema, migrated; `cleanup` closes it and drops the schema. */
export async function createTestPostgresStore(opts: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore & { schema: string; cleanup(): Promise<void> }> {
  const schema = freshSchema("t");
  const store = openTestStore({ poolSize: 4, ...opts, schema, own: true });
  await store.ready();
  return Object.assign(store, { schema, cleanup: () => store.close() });
}

/**
 * The PostgreSQL engine of the store-backed suites (tests/helpers/engines.ts): each test app gets
 * a schema of its own. Its raw SQL (for the few assertions no store method answers) is written with
 * SQLite's `?` placeholders and `IS ?`; this turns them into `$n` and `IS NOT DISTINCT FROM $n`.
 */
const sqlByStore = new WeakMap<Store, TestSql>();

/** Raw SQL on a store `postgresEngine` opened (tests/helpers/engines `testSql`); undefined for any other store. */
export function postgresTestSql(store: Store): TestSql | undefined {
  return sqlByStore.get(store);
}

export function postgresEngine(): TestEngine {
  const schemas = new WeakMap<Store, string>();
  const openOn = (schema: string, own: boolean): Store => {
    const store = openTestStore({ schema, own, poolSize: 3 });
    schemas.set(store, schema);
    // COUNT(*) and other bigints come back from node-postgres as strings; SQLite gives numbers,
    // and the suites' SQL is shared, so bigint columns are read as numbers here.
    const run = async (sql: string, params: unknown[]) => {
      await store.ready();
      const r = await store.pool.query(toPostgres(sql), params);
      const bigints = r.fields.filter((f) => f.dataTypeID === 20).map((f) => f.name);
      if (bigints.length > 0) for (const row of r.rows as Record<string, unknown>[]) for (const k of bigints) if (row[k] !== null) row[k] = Number(row[k]);
      return r;
    };
    sqlByStore.set(store, {
      get: async <T>(sql: string, ...params: unknown[]) => (await run(sql, params)).rows[0] as T | undefined,
      all: async <T>(sql: string, ...params: unknown[]) => (await run(sql, params)).rows as T[],
      run: async (sql: string, ...params: unknown[]) => (await run(sql, params)).rowCount ?? 0,
    });
    return store;
  };
  return {
    name: "postgres",
    skip: noPostgres,
    open: () => openOn(freshSchema("app"), true),
    // A second process's pool on the same schema; the first store drops the schema when it closes.
    peer: (store) => {
      const schema = schemas.get(store);
      if (!schema) throw new Error("tests: peer of a store this engine did not open");
      return openOn(schema, false);
    },
    databaseUrl: (store) => {
      const schema = schemas.get(store);
      if (!schema) throw new Error("tests: the URL of a store this engine did not open");
      return urlWithSchema(schema);
    },
  };
}

export function toPostgres(sql: string): string {
  let n = 0;
  return sql.replace(/\bIS NOT \?|\bIS \?|\?/g, (m) => (m === "?" ? `$${++n}` : m === "IS ?" ? `IS NOT DISTINCT FROM $${++n}` : `IS DISTINCT FROM $${++n}`));
}
