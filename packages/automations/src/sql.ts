/**
 * The SQL of both stores, written once. D1 and better-sqlite3 are both SQLite, so the only
 * difference between them is the binding API, and the better-sqlite3 store adapts its Database to
 * D1's prepare/bind/batch shape (see sqlite.ts). Everything here is plain SQLite 3.35+ (RETURNING,
 * upsert), which D1 runs as is.
 */
import { parseRule } from "./rule";
import type {
  ActionResult,
  CancelOptions,
  ClaimedRun,
  CountRecentQuery,
  Plan,
  PlannedRun,
  RetryOptions,
  RetryOutcome,
  Rule,
  RuleStore,
  Run,
  RunReason,
  RunStatus,
  Scheduler,
  SchedulerOptions,
} from "./types";

export interface SqlResult<T = Record<string, unknown>> {
  results: T[];
  meta: { changes: number };
}

/** The part of D1PreparedStatement the stores use. */
export interface SqlStatement<Self> {
  bind(...values: unknown[]): Self;
  all<T = Record<string, unknown>>(): Promise<SqlResult<T>>;
  run<T = Record<string, unknown>>(): Promise<SqlResult<T>>;
}

/** The part of D1Database the stores use: `batch` runs its statements in one transaction. */
export interface SqlDatabase<S extends SqlStatement<S>> {
  prepare(query: string): S;
  batch<T = unknown>(statements: S[]): Promise<SqlResult<T>[]>;
}

/** One statement per string: D1's exec splits on newlines and breaks a multi-line statement. */
export const AUTOMATIONS_MIGRATION_STATEMENTS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS automation_rule (id TEXT PRIMARY KEY NOT NULL, enabled INTEGER NOT NULL DEFAULT 0, version INTEGER, definition TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS automation_run (id TEXT PRIMARY KEY NOT NULL, rule_id TEXT NOT NULL, step_id TEXT NOT NULL, action TEXT NOT NULL, params TEXT NOT NULL DEFAULT '{}', subject_type TEXT NOT NULL, subject_id TEXT NOT NULL, subject_version INTEGER NOT NULL, cancel_key TEXT NOT NULL, contact_id TEXT, event_id TEXT NOT NULL, event_type TEXT NOT NULL, anchor_at INTEGER, due_at INTEGER NOT NULL, expires_at INTEGER, status TEXT NOT NULL, reason TEXT, attempts INTEGER NOT NULL DEFAULT 0, claim_token TEXT, lease_until INTEGER, last_error TEXT, message_id TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER)`,
  `CREATE INDEX IF NOT EXISTS automation_run_due ON automation_run (status, due_at, id)`,
  `CREATE INDEX IF NOT EXISTS automation_run_lease ON automation_run (status, lease_until)`,
  `CREATE INDEX IF NOT EXISTS automation_run_cancel ON automation_run (cancel_key, status, subject_version)`,
  `CREATE INDEX IF NOT EXISTS automation_run_cap ON automation_run (rule_id, contact_id, status, finished_at)`,
  `CREATE INDEX IF NOT EXISTS automation_run_finished ON automation_run (status, updated_at)`,
  `CREATE TABLE IF NOT EXISTS automation_subject (cancel_key TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
];

/** The migration as one file for a migrations/ folder. */
export function automationsMigrationSql(): string {
  return `${AUTOMATIONS_MIGRATION_STATEMENTS.join(";\n")};\n`;
}

const RUN_COLUMNS = [
  "id", "rule_id", "step_id", "action", "params", "subject_type", "subject_id", "subject_version", "cancel_key", "contact_id",
  "event_id", "event_type", "anchor_at", "due_at", "expires_at", "status", "reason", "attempts", "created_at", "updated_at", "finished_at",
] as const;

const FINISHED = "('done', 'failed', 'cancelled', 'skipped')";

export const SQL = {
  // Gated on the subject's recorded version so an event that arrives after a newer one plans
  // nothing; ON CONFLICT makes a redelivered plan a no-op.
  insertRun: `INSERT INTO automation_run (${RUN_COLUMNS.join(", ")}) SELECT ${RUN_COLUMNS.map(() => "?").join(", ")} WHERE NOT EXISTS (SELECT 1 FROM automation_subject WHERE cancel_key = ? AND version > ?) ON CONFLICT(id) DO NOTHING`,
  cancelOlder: `UPDATE automation_run SET status = 'cancelled', reason = ?, updated_at = ?, finished_at = ? WHERE cancel_key = ? AND status = 'pending' AND subject_version < ?`,
  recordVersion: `INSERT INTO automation_subject (cancel_key, version, updated_at) VALUES (?, ?, ?) ON CONFLICT(cancel_key) DO UPDATE SET version = max(version, excluded.version), updated_at = excluded.updated_at`,
  // A run whose lease ran out on its last allowed attempt: its holders keep dying, stop claiming it.
  failExhausted: `UPDATE automation_run SET status = 'failed', last_error = 'the lease ran out on every attempt', claim_token = NULL, lease_until = NULL, updated_at = ?, finished_at = ? WHERE status = 'running' AND lease_until <= ? AND attempts >= ?`,
  claim: `UPDATE automation_run SET status = 'running', claim_token = ?, lease_until = ?, attempts = attempts + 1, updated_at = ? WHERE id IN (SELECT id FROM automation_run WHERE (status = 'pending' AND due_at <= ?) OR (status = 'running' AND lease_until <= ?) ORDER BY due_at, id LIMIT ?) RETURNING *`,
  complete: `UPDATE automation_run SET status = 'done', message_id = ?, claim_token = NULL, lease_until = NULL, updated_at = ?, finished_at = ? WHERE id = ? AND claim_token = ? AND status = 'running'`,
  skip: `UPDATE automation_run SET status = 'skipped', reason = ?, claim_token = NULL, lease_until = NULL, updated_at = ?, finished_at = ? WHERE id = ? AND claim_token = ? AND status = 'running'`,
  fail: `UPDATE automation_run SET status = 'failed', last_error = ?, claim_token = NULL, lease_until = NULL, updated_at = ?, finished_at = ? WHERE id = ? AND claim_token = ? AND status = 'running'`,
  retry: `UPDATE automation_run SET status = 'pending', due_at = ?, last_error = ?, claim_token = NULL, lease_until = NULL, updated_at = ? WHERE id = ? AND claim_token = ? AND status = 'running'`,
  // The lateness window moves with the run: the action asked for later, the window keeps its length.
  defer: `UPDATE automation_run SET status = 'pending', expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE expires_at + (? - due_at) END, due_at = ?, attempts = max(attempts - 1, 0), claim_token = NULL, lease_until = NULL, updated_at = ? WHERE id = ? AND claim_token = ? AND status = 'running'`,
  countSent: `SELECT count(*) AS n FROM automation_run WHERE rule_id = ? AND contact_id = ? AND status = 'done' AND finished_at >= ?`,
  countSentOrAhead: `SELECT count(*) AS n FROM automation_run WHERE rule_id = ? AND contact_id = ? AND ((status = 'done' AND finished_at >= ?) OR (status = 'running' AND lease_until > ? AND id <> ? AND (due_at < ? OR (due_at = ? AND id < ?))))`,
  get: `SELECT * FROM automation_run WHERE id = ?`,
  purgeRuns: `DELETE FROM automation_run WHERE status IN ${FINISHED} AND updated_at < ?`,
  purgeSubjects: `DELETE FROM automation_subject WHERE updated_at < ? AND NOT EXISTS (SELECT 1 FROM automation_run r WHERE r.cancel_key = automation_subject.cancel_key AND r.status IN ('pending', 'running'))`,
  ruleGet: `SELECT definition FROM automation_rule WHERE id = ?`,
  ruleList: `SELECT definition FROM automation_rule ORDER BY id`,
  rulePut: `INSERT INTO automation_rule (id, enabled, version, definition, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET enabled = excluded.enabled, version = excluded.version, definition = excluded.definition, updated_at = excluded.updated_at`,
  ruleDelete: `DELETE FROM automation_rule WHERE id = ?`,
} as const;

export const DEFAULT_MAX_ATTEMPTS = 5;
export const DEFAULT_LEASE_MS = 10 * 60_000;
export const DEFAULT_BACKOFF_BASE_MS = 60_000;
export const DEFAULT_BACKOFF_MAX_MS = 60 * 60_000;
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60_000;
export const DEFAULT_CLAIM_LIMIT = 25;

type Row = Record<string, unknown>;

function num(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function str(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  // The columns read here hold text or numbers.
  const scalar = value as string | number | bigint;
  return String(scalar);
}

export function rowToRun(row: Row): Run {
  let params: Record<string, unknown>;
  try {
    params = JSON.parse(typeof row.params === "string" ? row.params : "{}") as Record<string, unknown>;
  } catch {
    params = {};
  }
  return {
    id: String(row.id),
    ruleId: String(row.rule_id),
    stepId: String(row.step_id),
    action: String(row.action),
    params,
    subjectType: String(row.subject_type),
    subjectId: String(row.subject_id),
    subjectVersion: Number(row.subject_version),
    cancelKey: String(row.cancel_key),
    contactId: str(row.contact_id),
    eventId: String(row.event_id),
    eventType: String(row.event_type),
    anchorAt: num(row.anchor_at),
    dueAt: Number(row.due_at),
    expiresAt: num(row.expires_at),
    status: String(row.status) as RunStatus,
    reason: str(row.reason),
    attempts: Number(row.attempts),
    claimToken: str(row.claim_token),
    leaseUntil: num(row.lease_until),
    lastError: str(row.last_error),
    messageId: str(row.message_id),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    finishedAt: num(row.finished_at),
  };
}

/** A wait in ms that a caller or an error asks for; 0 when it names none. */
function waitMs(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** The wait an error carries: a RetryableActionError's, or any error's `retryAfterMs` (a provider's 429). */
function retryAfterOf(error: unknown): unknown {
  return error !== null && typeof error === "object" ? (error as { retryAfterMs?: unknown }).retryAfterMs : undefined;
}

function errorText(error: unknown): string | null {
  if (error === undefined || error === null) return null;
  const text = error instanceof Error ? `${error.name}: ${error.message}` : typeof error === "string" ? error : typeof error === "symbol" ? error.toString() : typeof error === "function" ? Function.prototype.toString.call(error) : JSON.stringify(error);
  return text.length > 2000 ? `${text.slice(0, 1999)}…` : text;
}

/** The backoff before attempt `attempts + 1`: base doubling per attempt, capped. */
export function backoffMs(attempts: number, baseMs = DEFAULT_BACKOFF_BASE_MS, maxMs = DEFAULT_BACKOFF_MAX_MS): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30));
}

/** The Scheduler over any database with D1's prepare/bind/batch shape. */
export class SqlScheduler<S extends SqlStatement<S>> implements Scheduler<S> {
  readonly maxAttempts: number;
  readonly leaseMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;

  constructor(readonly db: SqlDatabase<S>, options: SchedulerOptions = {}) {
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.backoffBaseMs = options.backoff?.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
    this.backoffMaxMs = options.backoff?.maxMs ?? DEFAULT_BACKOFF_MAX_MS;
    if (!(this.maxAttempts >= 1 && this.leaseMs > 0 && this.backoffBaseMs >= 0 && this.backoffMaxMs >= this.backoffBaseMs)) {
      throw new RangeError(`@vibedout/automations: bad scheduler options ${JSON.stringify(options)}`);
    }
  }

  schedule(runs: readonly PlannedRun[]): S[] {
    return runs.map((r) =>
      this.db.prepare(SQL.insertRun).bind(
        r.id, r.ruleId, r.stepId, r.action, JSON.stringify(r.params ?? {}), r.subjectType, r.subjectId, r.subjectVersion, r.cancelKey, r.contactId,
        r.eventId, r.eventType, r.anchorAt, r.dueAt, r.expiresAt, r.status, r.reason, 0, r.createdAt, r.createdAt,
        r.status === "pending" ? null : r.createdAt,
        r.cancelKey, r.subjectVersion,
      ),
    );
  }

  cancel(key: string, options: CancelOptions): S[] {
    return [
      this.db.prepare(SQL.cancelOlder).bind(options.reason ?? "superseded", options.now, options.now, key, options.version),
      this.db.prepare(SQL.recordVersion).bind(key, options.version, options.now),
    ];
  }

  apply(plan: Plan): S[] {
    const writes: S[] = [];
    if (plan.cancel) writes.push(this.db.prepare(SQL.cancelOlder).bind(plan.cancel.reason, plan.at, plan.at, plan.cancel.key, plan.cancel.belowVersion));
    writes.push(...this.schedule(plan.runs));
    writes.push(this.db.prepare(SQL.recordVersion).bind(plan.subject.key, plan.subject.version, plan.at));
    return writes;
  }

  async claimDue(now: number, limit = DEFAULT_CLAIM_LIMIT): Promise<ClaimedRun[]> {
    const token = crypto.randomUUID();
    const [, claimed] = await this.db.batch<Row>([
      this.db.prepare(SQL.failExhausted).bind(now, now, now, this.maxAttempts),
      this.db.prepare(SQL.claim).bind(token, now + this.leaseMs, now, now, now, Math.max(1, Math.floor(limit))),
    ]);
    return (claimed?.results ?? []).map((row) => rowToRun(row) as ClaimedRun);
  }

  private async settle(statement: S): Promise<boolean> {
    const result = await statement.run();
    return result.meta.changes > 0;
  }

  complete(run: ClaimedRun, now: number, result: ActionResult = {}): Promise<boolean> {
    return this.settle(this.db.prepare(SQL.complete).bind(result.messageId ?? null, now, now, run.id, run.claimToken));
  }

  skip(run: ClaimedRun, now: number, reason: RunReason): Promise<boolean> {
    return this.settle(this.db.prepare(SQL.skip).bind(reason, now, now, run.id, run.claimToken));
  }

  fail(run: ClaimedRun, now: number, error?: unknown): Promise<boolean> {
    return this.settle(this.db.prepare(SQL.fail).bind(errorText(error), now, now, run.id, run.claimToken));
  }

  async retry(run: ClaimedRun, now: number, options: RetryOptions = {}): Promise<RetryOutcome> {
    if (run.attempts >= this.maxAttempts) return (await this.fail(run, now, options.error)) ? "failed" : "lost";
    const curve = backoffMs(run.attempts, this.backoffBaseMs, this.backoffMaxMs);
    const delay = Math.min(Math.max(curve, waitMs(options.retryAfterMs), waitMs(retryAfterOf(options.error))), MAX_RETRY_AFTER_MS);
    const ok = await this.settle(this.db.prepare(SQL.retry).bind(now + delay, errorText(options.error), now, run.id, run.claimToken));
    return ok ? "retry" : "lost";
  }

  defer(run: ClaimedRun, now: number, untilMs: number): Promise<boolean> {
    return this.settle(this.db.prepare(SQL.defer).bind(untilMs, untilMs, now, run.id, run.claimToken));
  }

  async countRecent(query: CountRecentQuery): Promise<number> {
    const ahead = query.inFlightBefore;
    const statement = ahead
      ? this.db.prepare(SQL.countSentOrAhead).bind(query.ruleId, query.contactId, query.since, ahead.now, ahead.id, ahead.dueAt, ahead.dueAt, ahead.id)
      : this.db.prepare(SQL.countSent).bind(query.ruleId, query.contactId, query.since);
    const { results } = await statement.all<{ n: number }>();
    return Number(results[0]?.n ?? 0);
  }

  async get(id: string): Promise<Run | null> {
    const { results } = await this.db.prepare(SQL.get).bind(id).all<Row>();
    return results[0] ? rowToRun(results[0]) : null;
  }

  async purgeFinished(before: number): Promise<number> {
    const [runs] = await this.db.batch([this.db.prepare(SQL.purgeRuns).bind(before), this.db.prepare(SQL.purgeSubjects).bind(before)]);
    return runs?.meta.changes ?? 0;
  }
}

/** Rules stored as their JSON definition, read back through parseRule. */
export class SqlRuleStore<S extends SqlStatement<S>> implements RuleStore {
  constructor(readonly db: SqlDatabase<S>) {}

  private read(definition: unknown, where: string): Rule {
    let input: unknown;
    try {
      input = JSON.parse(String(definition));
    } catch (cause) {
      throw new Error(`@vibedout/automations: rule ${where} is not valid JSON`, { cause });
    }
    const parsed = parseRule(input);
    if (!parsed.ok) throw new Error(`@vibedout/automations: stored rule ${where} is invalid: ${parsed.problems.map((p) => `${p.path || "(rule)"} ${p.code}`).join(", ")}`);
    return parsed.rule;
  }

  async get(id: string): Promise<Rule | null> {
    const { results } = await this.db.prepare(SQL.ruleGet).bind(id).all<{ definition: string }>();
    return results[0] ? this.read(results[0].definition, JSON.stringify(id)) : null;
  }

  async list(): Promise<Rule[]> {
    const { results } = await this.db.prepare(SQL.ruleList).all<{ definition: string }>();
    return results.map((r, i) => this.read(r.definition, `#${i}`));
  }

  /** The statement that stores the rule, for the caller's own batch. */
  putStatement(rule: Rule, now: number): S {
    const parsed = parseRule(rule);
    if (!parsed.ok) throw new TypeError(`@vibedout/automations: refusing to store an invalid rule: ${parsed.problems.map((p) => `${p.path || "(rule)"} ${p.code}`).join(", ")}`);
    const r = parsed.rule;
    return this.db.prepare(SQL.rulePut).bind(r.id, r.enabled ? 1 : 0, r.version ?? null, JSON.stringify(r), now, now);
  }

  async put(rule: Rule, now: number): Promise<void> {
    await this.putStatement(rule, now).run();
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.prepare(SQL.ruleDelete).bind(id).run();
    return result.meta.changes > 0;
  }
}
