import { randomBytes } from "node:crypto";
import { openPostgresStore } from "@/lib/db/store/postgres";
import { registerTestSql, type TestEngine } from "./engines";

/**
 * The PostgreSQL test engine: each test app gets a schema of its own on TEST_POSTGRES_URL, created
 * and migrated by the store on first use and dropped when the store closes. Its raw SQL (for the
 * few assertions no store method answers) is written with SQLite's `?` placeholders and `IS ?`;
 * this turns them into `$n` and `IS NOT DISTINCT FROM $n`.
 */
export function postgresEngine(): TestEngine {
  const url = process.env.TEST_POSTGRES_URL;
  return {
    name: "postgres",
    skip: url ? null : "TEST_POSTGRES_URL is not set",
    open: () => {
      if (!url) throw new Error("tests: TEST_POSTGRES_URL is not set");
      const schema = `app_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
      const store = openPostgresStore({ url, schema, ownSchema: true, poolSize: 3 });
      const run = async (sql: string, params: unknown[]) => {
        await store.ready();
        return store.pool.query(toPostgres(sql), params);
      };
      registerTestSql(store, {
        get: async <T>(sql: string, ...params: unknown[]) => (await run(sql, params)).rows[0] as T | undefined,
        all: async <T>(sql: string, ...params: unknown[]) => (await run(sql, params)).rows as T[],
        run: async (sql: string, ...params: unknown[]) => (await run(sql, params)).rowCount ?? 0,
      });
      return store;
    },
    peer: () => {
      throw new Error("tests: the PostgreSQL engine is not available in this build");
    },
  };
}

export function toPostgres(sql: string): string {
  let n = 0;
  return sql.replace(/\bIS NOT \?|\bIS \?|\?/g, (m) => (m === "?" ? `$${++n}` : m === "IS ?" ? `IS NOT DISTINCT FROM $${++n}` : `IS DISTINCT FROM $${++n}`));
}
