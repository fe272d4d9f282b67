/**
 * The store seam: everything the app keeps, as async interfaces, one per aggregate, and
 * a unit of work for the writes that must commit together. Two implementations pass one contract
 * suite (tests/contract/store.ts): SQLite (lib/db/store/sqlite, the default) and PostgreSQL.
 *
 * Only a store writes SQL or knows its dialect. Everything above (ingress, queue loop, scheduler,
 * executor, API, pages, scripts) talks to `Store`.
 *
 * Conventions every method follows (the contract suite checks them):
 * - Timestamps cross the seam as ISO 8601 UTC strings with milliseconds (`Date#toISOString()`),
 *   or as `Date` where the argument is "now"; they are stored so that they sort and compare as
 *   those strings (SQLite: text; PostgreSQL: a store may use timestamptz but must hand back the
 *   same `toISOString()` text it was given, millisecond precision).
 * - JSON columns (definition, payload, steps, seen_keys, last_value) go in as values (or, on the
 *   ingest hot path, as already-serialized text) and come back parsed.
 * - "false" / `null` returns mean "nothing matched" (a lost claim, an unknown id), never an error.
 *   A method throws only when the database itself failed (disk full, connection lost, constraint
 *   broken in a way the method does not document): the error is the driver's, with its code, so
 *   lib/core/faults can tell a full disk (SQLite `SQLITE_FULL`, PostgreSQL `53100`) from a bug.
 * - Every method resolves only after its write is committed (or, inside `transaction`, is part of
 *   the transaction that commits or rolls back as a whole). A claim that was not committed is
 *   never returned (nothing executes without a committed claim).
 */

// This file gathers the seam's types, which live one file per aggregate in ./types/ (the store
// itself, StoreAggregates and Store, in ./types/store.ts), so importers name one module.
export * from "./types/alert-policy";
export * from "./types/alerts-store";
export * from "./types/api-tokens";
export * from "./types/applets";
export * from "./types/event-files";
export * from "./types/fires";
export * from "./types/job-locks";
export * from "./types/maintenance";
export * from "./types/planned-runs";
export * from "./types/run-controls";
export * from "./types/runs-store";
export * from "./types/secrets";
export * from "./types/seed";
export * from "./types/store";
export * from "./types/trigger-state-store";
export * from "./types/users";
export * from "./types/waits";
export * from "./types/workers";
