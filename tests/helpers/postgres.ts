import { randomBytes } from "node:crypto";
import pg from "pg";
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from "@/lib/db/store/postgres";

/** The server the PostgreSQL tests use; unset: they skip with this reason. */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL || "";
export const noPostgres = TEST_POSTGRES_URL ? null : "TEST_POSTGRES_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test): PostgreSQL tests skipped";

/**
 * A fresh schema in the test database for one test (or file): the app's tables are created there
 * by the store's own migrations, and `drop()` removes it with everything in it. Schemas keep
 * parallel test files (and other checkouts on the same server) apart without a database each.
 */
export async function createTestSchema(prefix = "t"): Promise<{ schema: string; drop(): Promise<void> }> {
  const schema = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
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

/** A PostgreSQL store on a fresh schema; `cleanup` closes it and drops the schema. */
export async function createTestPostgresStore(opts: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore & { schema: string; cleanup(): Promise<void> }> {
  const { schema, drop } = await createTestSchema();
  const store = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 4, ...opts });
  await store.ready();
  return Object.assign(store, {
    schema,
    cleanup: async () => {
      await store.close();
      await drop();
    },
  });
}
