import { createRequire } from "node:module";
import type pg from "pg";

let loaded: typeof pg | undefined;

/**
 * The pg driver, loaded when a PostgreSQL store first connects: the SQLite default never loads it
 * (~6 MB of RSS per process over what the worker loads anyway, measured with `node --expose-gc`
 * after the worker's own modules).
 */
export function pgDriver(): typeof pg {
  return (loaded ??= createRequire(import.meta.url)("pg") as typeof pg);
}
