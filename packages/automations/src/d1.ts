/**
 * The D1 store. D1Scheduler and D1RuleStore take your `env.DB` binding; schedule, cancel and apply
 * return D1 prepared statements for your own `env.DB.batch()`, so a plan lands in the same
 * transaction as the write that caused it.
 */
import { AUTOMATIONS_MIGRATION_STATEMENTS, SqlRuleStore, SqlScheduler, type SqlDatabase, type SqlStatement } from "./sql";
import type { SchedulerOptions } from "./types";

export { AUTOMATIONS_MIGRATION_STATEMENTS, automationsMigrationSql, backoffMs, DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS } from "./sql";
export type { SqlDatabase, SqlStatement, SqlResult } from "./sql";

/**
 * The part of the D1 binding this package uses. Declared here rather than imported from
 * @cloudflare/workers-types so that neither the package nor its users need those types loaded
 * globally; a real `D1Database` fits it.
 */
export type D1DatabaseLike<S extends SqlStatement<S>> = SqlDatabase<S>;

export class D1Scheduler<S extends SqlStatement<S>> extends SqlScheduler<S> {
  constructor(db: D1DatabaseLike<S>, options: SchedulerOptions = {}) {
    super(db, options);
  }
}

export class D1RuleStore<S extends SqlStatement<S>> extends SqlRuleStore<S> {}

/** Applies the migration in one batch; idempotent (CREATE … IF NOT EXISTS). */
export async function applyAutomationsMigration<S extends SqlStatement<S>>(db: D1DatabaseLike<S>): Promise<void> {
  await db.batch(AUTOMATIONS_MIGRATION_STATEMENTS.map((sql) => db.prepare(sql)));
}
