import { randomBytes } from "node:crypto";
import { openPostgresStore } from "@/lib/db/store/postgres";
import type { Store } from "@/lib/db/store";
import { registerTestSql, type TestEngine } from "./engines";

/**
 * The PostgreSQL test engine: each test app gets a schema of its own on TEST_POSTGRES_URL, created
 * and migrated by the store on first use and dropped when the store closes. Its raw SQL (for the
 * few assertions no store method answers) is written with SQLite's `?` placeholders and `IS ?`;
 * this turns them into `$n` and `IS NOT DISTINCT FROM $n`.
 */
export function postgresEngine(): TestEngine {
  const url = process.env.TEST_POSTGRES_URL;
  const schemas = new WeakMap<Store, string>();
  const openOn = (schema: string, own: boolean): Store => {
    if (!url) throw new Error("tests: TEST_POSTGRES_URL is not set");
    const store = openPostgresStore({ url, schema, ownSchema: own, poolSize: 3 });
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
    registerTestSql(store, {
      get: async <T>(sql: string, ...params: unknown[]) => (await run(sql, params)).rows[0] as T | undefined,
      all: async <T>(sql: string, ...params: unknown[]) => (await run(sql, params)).rows as T[],
      run: async (sql: string, ...params: unknown[]) => (await run(sql, params)).rowCount ?? 0,
    });
    return store;
  };
  return {
    name: "postgres",
    skip: url ? null : "TEST_POSTGRES_URL is not set",
    open: () => openOn(`app_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`, true),
    // A second process's pool on the same schema; the first store drops the schema when it closes.
    peer: (store) => {
      const schema = schemas.get(store);
      if (!schema) throw new Error("tests: peer of a store this engine did not open");
      return openOn(schema, false);
    },
    databaseUrl: (store) => {
      const schema = schemas.get(store);
      if (!schema || !url) throw new Error("tests: the URL of a store this engine did not open");
      return `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    },
  };
}

export function toPostgres(sql: string): string {
  let n = 0;
  return sql.replace(/\bIS NOT \?|\bIS \?|\?/g, (m) => (m === "?" ? `$${++n}` : m === "IS ?" ? `IS NOT DISTINCT FROM $${++n}` : `IS DISTINCT FROM $${++n}`));
}
