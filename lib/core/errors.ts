/**
 * The small set of error classes the app uses. Every one carries `cause` when it wraps another.
 * - UserError: the input is wrong; the message says what and where. Never retried.
 *   TooLargeError is the one kind of it that answers 413: a body over its limit.
 * - ActionError: what an action (or trigger fetch) throws; `retryable` decides the queue's answer
 *   (the outside world failed: network, 5xx, 429 are retryable).
 */
export class UserError extends Error {
  override name = "UserError";
  constructor(
    message: string,
    readonly details?: { path: string; message: string }[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A request body over its limit: refused (413) before more of it is read. */
export class TooLargeError extends UserError {
  override name = "TooLargeError";
  constructor(readonly limitBytes: number) {
    super(`request body larger than ${limitBytes} bytes`, [{ path: "", message: `at most ${limitBytes} bytes` }]);
  }
}

export interface ActionErrorOptions {
  retryable?: boolean;
  /** The provider asked us to wait at least this long (Retry-After, Discord's retry_after). */
  retryAfterMs?: number;
  cause?: unknown;
  /** Output worth keeping on the failed step, e.g. the response status and body. */
  output?: unknown;
}

export class ActionError extends Error {
  override name = "ActionError";
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly output?: unknown;
  constructor(message: string, options: ActionErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.retryable = options.retryable ?? false;
    this.retryAfterMs = options.retryAfterMs;
    this.output = options.output;
  }
}

export const errorMessage = (err: unknown): string =>
  err instanceof Error ? err.message : typeof err === "string" ? err : JSON.stringify(err);

/** Set on an error the store recognised as its database being away (lib/db/store/postgres/pool.ts). */
const STORE_UNAVAILABLE = Symbol.for("whenthen.storeUnavailable");

/**
 * Marks `err` as the store's database being away or refusing for a while (a server restarting, a
 * connection cut, too many clients), so `isDatabaseError` recognises it. Only the store marks:
 * the network codes such an error carries (ECONNREFUSED, ECONNRESET) are also what an action's
 * own request throws, which is the action's failure, not the database's.
 */
export function markStoreUnavailable<E>(err: E): E {
  if (err !== null && typeof err === "object") Object.defineProperty(err, STORE_UNAVAILABLE, { value: true, enumerable: false, configurable: true });
  return err;
}

/**
 * The database refused the statement: a full disk (SQLITE_FULL), an I/O error, a lock held past
 * busy_timeout, or a PostgreSQL server that is restarting, unreachable or out of connections. Not
 * the run's fault and not a bug in what it did: the caller keeps what it has, backs off and tries
 * again. Recognised by better-sqlite3's `SQLITE_*` error codes, and by the mark the PostgreSQL
 * store puts on its driver's connection and availability errors (`markStoreUnavailable`).
 */
export const isDatabaseError = (err: unknown): err is Error & { code?: string } => {
  if (!(err instanceof Error)) return false;
  if ((err as unknown as Record<symbol, unknown>)[STORE_UNAVAILABLE] === true) return true;
  const code: unknown = (err as Error & { code?: unknown }).code;
  return typeof code === "string" && code.startsWith("SQLITE_");
};
