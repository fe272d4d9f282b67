import type { Clock } from "../../core/clock";
import type { Logger } from "../../core/log";
import { openPostgresStore, type InstanceKeys } from "./postgres";
import { openSqliteStore } from "./sqlite";
import type { AlertPolicy, Store, StoreOptions } from "./types";

export type * from "./types";
export { SYSTEM_AUTHOR } from "./types";

export interface OpenStoreOptions extends StoreOptions {
  log?: Logger;
  clock?: Clock;
  migrationsDir?: string;
  /** PostgreSQL: a direct (session) URL for LISTEN (DATABASE_LISTEN_URL); default `url`. */
  listenUrl?: string;
  /** PostgreSQL: checked against the fingerprints the database was initialised with. */
  keys?: InstanceKeys;
  /**
   * What a settle or a stored poll means for alerts (lib/alerts/policy.ts's `alertPolicy`): the
   * store records its answer in the same transaction, and names nothing above itself to ask it.
   */
  alertPolicy: AlertPolicy;
}

/**
 * Opens the store `url` names: a SQLite file (`file:…` or a path; the default) or PostgreSQL
 * (`postgres://…`). The one place a composition root learns the engine.
 */
export function openStore(opts: OpenStoreOptions): Store {
  const url = opts.url;
  if (/^postgres(ql)?:\/\//i.test(url)) {
    return openPostgresStore({ url, listenUrl: opts.listenUrl, poolSize: opts.poolSize, keys: opts.keys, log: opts.log, migrationsDir: opts.migrationsDir, alertPolicy: opts.alertPolicy });
  }
  const file = url.startsWith("file:") ? url.slice("file:".length) : url;
  return openSqliteStore({ file, synchronous: opts.sqliteSynchronous, role: opts.role, log: opts.log, clock: opts.clock, migrationsDir: opts.migrationsDir, alertPolicy: opts.alertPolicy });
}
