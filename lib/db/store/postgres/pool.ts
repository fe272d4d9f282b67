import { createHash } from "node:crypto";
import type pg from "pg";
import { markStoreUnavailable } from "../../../core/errors";
import type { Logger } from "../../../core/log";
import { pgDriver } from "./driver";

/** A pool or one checked-out client (inside a transaction): both answer `query`. */
export type Queryable = pg.Pool | pg.PoolClient;

/**
 * How an aggregate opens a transaction: on the pool, a transaction of its own; on a client already
 * inside one (Store#transaction), that client, so the method joins the outer transaction.
 */
export type Begin = <T>(fn: (client: Queryable) => Promise<T>) => Promise<T>;

export interface PgPoolOptions {
  url: string;
  /** Connections in this process's pool (DATABASE_POOL_SIZE). */
  max: number;
  /** Schema for the app's tables (tests: one per test file); default the server's search_path. */
  schema?: string;
  /** For the store's own name in pg_stat_activity. */
  applicationName?: string;
  log?: Logger;
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
  // pg-pool listens for a client's 'error' only while the client is idle in the pool: a connection
  // cut while the client is checked out (a transaction, the migrations) would emit it unheard and
  // end the process. The statement in flight, or the next one, rejects with the failure and its
  // caller reports that; the client, no longer queryable, is dropped when released.
  pool.on("connect", (client) => {
    client.on("error", (err) => opts.log?.debug("postgres: a connection in use was cut", { error: err.message }));
  });
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
  try {
    return await q.query<R>({ name: nameOf(text), text, values });
  } catch (err) {
    throw storeError(err);
  }
}

/** A statement whose text varies (IN lists, optional filters): not prepared, so names do not pile up. */
export async function queryDynamic<R extends pg.QueryResultRow = Record<string, unknown>>(q: Queryable, text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  try {
    return await q.query<R>(text, values);
  } catch (err) {
    throw storeError(err);
  }
}

/**
 * SQLSTATE classes and codes that say the server is away or refusing for a while, not that the
 * statement is wrong: 08 connection exception, 53 insufficient resources (disk full, too many
 * connections), 57P01-57P05 (shut down, crashed, starting up, database dropped, idle timeout),
 * 57014 (a statement cancelled: a timeout or an operator), 58 system error (I/O), 28 a login the
 * server refuses (a password changed under the running app), 3D000 (the database is not there yet),
 * 40001 / 40P01 (a serialization failure or a deadlock: the same statement goes in when tried again).
 */
const UNAVAILABLE_STATE = /^(08|53|58|28)[0-9A-Z]{3}$|^57P0[0-9]$|^(57014|3D000|40001|40P01)$/;
/** What node's sockets say when the server is not reachable or the connection was cut. */
const UNAVAILABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "EHOSTDOWN", "ENETUNREACH", "ENETDOWN", "ECONNABORTED", "ENOTFOUND", "EAI_AGAIN", "EADDRNOTAVAIL"]);
/** node-postgres's (pg 8, pg-pool 3) own words for a connection that is gone or could not be made. */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|timeout exceeded when trying to connect|timeout expired|Query read timeout)/;

/** Whether a node-postgres error means the server is away or refusing for a while (see above). */
export function pgUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && (UNAVAILABLE_STATE.test(code) || UNAVAILABLE_CODES.has(code))) return true;
  if (UNAVAILABLE_MESSAGE.test(err.message)) return true;
  // Node tries every address of a host name in turn and reports all their failures at once.
  if (err instanceof AggregateError) return err.errors.length > 0 && err.errors.every(pgUnavailable);
  return false;
}

/** `err` marked for `isDatabaseError` when it says the server is away (lib/core/errors.ts). */
export function storeError(err: unknown): unknown {
  return pgUnavailable(err) ? markStoreUnavailable(err) : err;
}

/** BEGIN … COMMIT on one client; ROLLBACK and rethrow when `fn` rejects. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw storeError(err);
  }
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
    throw storeError(err);
  } finally {
    // A client whose ROLLBACK failed has a dead or confused connection: dropped, not reused.
    client.release(broken);
  }
}

/** The PostgreSQL error code (SQLSTATE) of a driver error, if it is one. */
export const sqlState = (err: unknown): string | undefined => (err as { code?: unknown } | null)?.code as string | undefined;

/**
 * One line for an operator whose PostgreSQL refuses this process (at start, or while running):
 * where it tried (host:port/database, never the password) and what to check.
 */
export function explainUnavailable(err: unknown, url: string): string {
  let where = "the database";
  try {
    const u = new URL(url);
    where = `${u.hostname || "localhost"}:${u.port || "5432"}${u.pathname && u.pathname !== "/" ? u.pathname : ""}`;
  } catch {
    // a URL the driver read differently: say nothing of it rather than echo it (it may hold the password)
  }
  const e = (err instanceof AggregateError && err.errors[0] ? err.errors[0] : err) as { code?: unknown; message?: unknown };
  const code = typeof e?.code === "string" ? e.code : "";
  const message = typeof e?.message === "string" ? e.message : String(err);
  const advice: Record<string, string> = {
    ECONNREFUSED: "nothing accepts connections there: is PostgreSQL running, and are DATABASE_URL's host and port right?",
    ENOTFOUND: "the host name does not resolve: check DATABASE_URL's host",
    EAI_AGAIN: "the host name could not be resolved yet",
    ETIMEDOUT: "the server did not answer in time: is the host reachable?",
    "28P01": "the server refused the login: check the user and password in DATABASE_URL",
    "28000": "the server refused the login (pg_hba.conf or the user): check DATABASE_URL and the server's access rules",
    "53300": "the server has too many clients: raise its max_connections or lower DATABASE_POOL_SIZE",
    "57P03": "the server is starting up or shutting down",
    "3D000": "the database does not exist: create it (CREATE DATABASE) or fix DATABASE_URL's path",
  };
  return `postgres: cannot use ${where}: ${message}${code && !message.includes(code) ? ` (${code})` : ""}; ${advice[code] ?? "the server is away or refusing connections"}`;
}
