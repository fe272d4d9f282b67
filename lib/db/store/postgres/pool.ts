import { createHash } from "node:crypto";
import type pg from "pg";
import { pgDriver } from "./driver";

/** A pool or one checked-out client (inside a transaction): both answer `query`. */
export type Queryable = pg.Pool | pg.PoolClient;

export interface PgPoolOptions {
  url: string;
  /** Connections in this process's pool (DATABASE_POOL_SIZE). */
  max: number;
  /** Schema for the app's tables (tests: one per test file); default the server's search_path. */
  schema?: string;
  /** For the store's own name in pg_stat_activity. */
  applicationName?: string;
}

/** node-postgres returns bigint (count(*)) and numeric as strings; integers stay numbers. */
export function createPool(opts: PgPoolOptions): pg.Pool {
  const pool = new (pgDriver().Pool)({
    connectionString: opts.url,
    max: opts.max,
    application_name: opts.applicationName ?? "whenthen",
    options: opts.schema ? `-c search_path=${assertSchema(opts.schema)}` : undefined,
    idleTimeoutMillis: 30_000,
  });
  // An idle client dropped by the server is emitted here; without a listener it would end the
  // process. The next query on the pool reports the failure to its caller instead.
  pool.on("error", () => undefined);
  return pool;
}

export function assertSchema(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`postgres: schema "${schema}" must be a lower-case identifier`);
  return schema;
}

const names = new Map<string, string>();
/** Every statement runs prepared (parsed and planned once per connection), named by its text. */
function nameOf(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `w_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`;
    names.set(text, name);
  }
  return name;
}

export async function query<R extends pg.QueryResultRow = Record<string, unknown>>(q: Queryable, text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  return q.query<R>({ name: nameOf(text), text, values });
}

/** A statement whose text varies (IN lists, optional filters): not prepared, so names do not pile up. */
export async function queryDynamic<R extends pg.QueryResultRow = Record<string, unknown>>(q: Queryable, text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  return q.query<R>(text, values);
}

/** BEGIN … COMMIT on one client; ROLLBACK and rethrow when `fn` rejects. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    const out = await fn(client);
    await client.query("COMMIT");
    return out;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    // A client whose ROLLBACK failed has a dead or confused connection: dropped, not reused.
    client.release(broken);
  }
}

/** The PostgreSQL error code (SQLSTATE) of a driver error, if it is one. */
export const sqlState = (err: unknown): string | undefined => (err as { code?: unknown } | null)?.code as string | undefined;
