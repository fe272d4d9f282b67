/**
 * @whenthen/schedules — runtime-editable schedules, a reconciler that fires each slot at most
 * once across runners, and pluggable stores (each its own entry point, so a host only loads the
 * driver it uses): "@whenthen/schedules/memory", "/sqlite", "/postgres", "/mysql", "/redis".
 *
 * Where the databases differ (all of it lives inside the stores):
 *
 * | concern          | sqlite (better-sqlite3)          | postgres (pg)                        | mysql / mariadb (mysql2)              | redis (ioredis)                          |
 * |------------------|----------------------------------|--------------------------------------|---------------------------------------|------------------------------------------|
 * | dates            | INTEGER epoch ms                 | BIGINT epoch ms (timestamptz keeps µs; a JS Date only ms) | BIGINT epoch ms (DATETIME rounds or truncates ms and reads back in the session zone) | decimal ms strings in the hash; zset score (exact to 2^53) |
 * | claimDue         | UPDATE … WHERE id AND next_run_at AND enabled; changes = 1 (single writer) | same UPDATE … RETURNING id; one row back (row lock + WHERE recheck) | same UPDATE; affectedRows = 1 (mysql2 sets CLIENT_FOUND_ROWS) | Lua script: compare stored next_run_at string, then write hash + both zsets |
 * | due query        | index (enabled, next_run_at, id) | same index                           | same index                            | zset of enabled ids scored by next run; ZRANGEBYSCORE -inf now |
 * | kind filter      | kind IN (…)                      | kind = ANY($n)                       | kind IN (…)                           | filtered after reading, paging on        |
 * | schema           | created on construct             | migrate() (advisory lock: concurrent CREATE IF NOT EXISTS can fail) | migrate() (index inline: no CREATE INDEX IF NOT EXISTS in MySQL) | none; key prefix (a hash tag by default, for Cluster) |
 * | input            | TEXT (JSON)                      | TEXT (JSON; jsonb would reorder keys) | LONGTEXT (JSON)                      | hash field (JSON)                        |
 * | duplicate id     | SQLITE_CONSTRAINT_PRIMARYKEY     | 23505                                | ER_DUP_ENTRY                          | EXISTS check inside the add script       |
 * | booleans         | INTEGER 0/1                      | BOOLEAN                              | TINYINT(1)                            | "0"/"1"                                  |
 * | collation of ids | binary                           | binary (C for equality)              | utf8mb4_bin, so ids compare like elsewhere | binary                              |
 */
export type { Schedule, ScheduleAdapter, ScheduleClock, ScheduleFilter, ScheduleInit, ScheduleKind, SchedulePatch } from "./types";
export { ScheduleConflictError, ScheduleError, ScheduleValidationError, UnreadableScheduleInput } from "./errors";
// The in-process store under the spec's name (also "@whenthen/schedules/memory"): it has no driver.
export { MemoryScheduleStore, MemoryScheduleStore as ScheduleMemoryAdapter } from "./stores/memory";
export { parseInterval } from "./interval";
export { CRON_NICKNAMES, expandCron } from "./cron";
// The wall-clock rule the cron matching uses (a time in the spring-forward gap is the first valid
// time after it; a repeated time is its first occurrence), for hosts that place other wall times.
export { firstInstantOfWall, wallOf } from "./zoned";
export { assertValidSchedule, buildSchedule, isValidTimeZone, nextRunAfter, validateTiming, type ScheduleTiming, type TimingOptions } from "./timing";
export { RUN_STATUS, ScheduleReconciler, type ScheduleReconcilerOptions, type TickSummary } from "./reconciler";
