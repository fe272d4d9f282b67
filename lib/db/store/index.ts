import type { Clock } from "../../core/clock";
import type { Logger } from "../../core/log";
import { openSqliteStore } from "./sqlite";
import type { Store, StoreOptions } from "./types";

export type * from "./types";

/**
 * Opens the store `url` names: a SQLite file (`file:…` or a path; the default) or, with the
 * PostgreSQL implementation, `postgres://…`. The one place a composition root learns the engine.
 */
export function openStore(opts: StoreOptions & { log?: Logger; clock?: Clock; migrationsDir?: string }): Store {
  const url = opts.url;
  if (/^postgres(ql)?:\/\//i.test(url)) {
    throw new Error("store: DATABASE_URL postgres://… needs the PostgreSQL store, which this build does not include");
  }
  const file = url.startsWith("file:") ? url.slice("file:".length) : url;
  return openSqliteStore({ file, synchronous: opts.sqliteSynchronous, role: opts.role, log: opts.log, clock: opts.clock, migrationsDir: opts.migrationsDir });
}
