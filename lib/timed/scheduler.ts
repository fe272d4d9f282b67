/**
 * @vibedout/automations' Scheduler over the app's store, so the library's own sweepDue
 * drives the app's planned runs on SQLite and PostgreSQL alike. A run's "send" is its dispatch: the
 * planned run is done and its `runs` row is queued in the same transaction, and the app's executor
 * runs it (steps, retries, run log, the planned run's id as idempotency key).
 */
import { randomUUID } from "node:crypto";
import { backoffMs, DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS } from "@vibedout/automations/sqlite";
import type {
  ActionResult,
  CancelOptions,
  ClaimedRun,
  CountRecentQuery,
  Plan,
  PlannedRun,
  RetryOptions,
  RetryOutcome,
  Run,
  RunReason,
  Scheduler,
} from "@vibedout/automations";
import type { ClaimedPlannedRun, PlannedRunsStore, PlanWrite, StoredPlannedRun } from "../db/store/types";
import { TIMED_ACTION } from "./rule";

/** The library's ceiling for a retry's wait (src/sql.ts MAX_RETRY_AFTER_MS). */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60_000;

export interface StoreSchedulerOptions {
  leaseMs?: number;
  maxAttempts?: number;
  backoff?: { baseMs?: number; maxMs?: number };
  /** Max attempts of the `runs` row of a run planned through `schedule`/`apply` (not through an ingest). */
  runMaxAttempts?: number;
}

function errorText(error: unknown): string | null {
  if (error === undefined || error === null) return null;
  const text = error instanceof Error ? `${error.name}: ${error.message}` : typeof error === "string" ? error : JSON.stringify(error);
  return text.length > 2000 ? `${text.slice(0, 1999)}…` : text;
}

const waitOf = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** As the library's claimed run: the action every planned run of the app carries, its action index as params. */
function toLibRun(r: StoredPlannedRun): Run {
  return { ...r, action: TIMED_ACTION, params: { actionIndex: r.actionIndex }, messageId: null };
}

/** The store's claimed row behind a claimed library run (the claim token and lease are what fence). */
const toStoreRun = (r: ClaimedRun): ClaimedPlannedRun => ({ ...(r as unknown as ClaimedPlannedRun) });

export class StoreScheduler implements Scheduler<PlanWrite> {
  readonly leaseMs: number;
  readonly maxAttempts: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly runMaxAttempts: number;

  constructor(
    private readonly store: PlannedRunsStore,
    options: StoreSchedulerOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.backoffBaseMs = options.backoff?.baseMs ?? 60_000;
    this.backoffMaxMs = options.backoff?.maxMs ?? 60 * 60_000;
    this.runMaxAttempts = options.runMaxAttempts ?? 5;
  }

  /** Runs planned by the library (not through an ingest): the applet is the rule, the action its params. */
  schedule(runs: readonly PlannedRun[]): PlanWrite[] {
    return [{ runs: runs.map((r) => this.insertOf(r)), cancel: null, subject: null, at: runs[0]?.createdAt ?? 0 }];
  }

  cancel(key: string, options: CancelOptions): PlanWrite[] {
    return [{ runs: [], cancel: { key, belowVersion: options.version, reason: options.reason ?? "superseded" }, subject: { key, version: options.version }, at: options.now }];
  }

  apply(plan: Plan): PlanWrite[] {
    return [{ runs: plan.runs.map((r) => this.insertOf(r)), cancel: plan.cancel, subject: plan.subject, at: plan.at }];
  }

  /** Writes what schedule / cancel / apply returned, each in one transaction. */
  async write(writes: PlanWrite[]): Promise<void> {
    for (const w of writes) await this.store.apply(w);
  }

  private insertOf(r: PlannedRun) {
    return { ...r, appletId: r.ruleId, actionIndex: Number(r.params.actionIndex), note: null, originalDueAt: null, maxAttempts: this.runMaxAttempts };
  }

  async claimDue(now: number, limit = 25): Promise<ClaimedRun[]> {
    const rows = await this.store.claimDue(now, { limit, leaseMs: this.leaseMs, maxAttempts: this.maxAttempts, token: randomUUID() });
    return rows.map((r) => toLibRun(r) as ClaimedRun);
  }

  complete(run: ClaimedRun, now: number, _result?: ActionResult): Promise<boolean> {
    return this.store.dispatch(toStoreRun(run), now);
  }

  skip(run: ClaimedRun, now: number, reason: RunReason): Promise<boolean> {
    return this.store.skip(toStoreRun(run), now, reason);
  }

  fail(run: ClaimedRun, now: number, error?: unknown): Promise<boolean> {
    return this.store.fail(toStoreRun(run), now, errorText(error));
  }

  /** The library's rule: the longest of the backoff curve, the caller's hint and the error's retryAfterMs, up to a day. */
  async retry(run: ClaimedRun, now: number, options: RetryOptions = {}): Promise<RetryOutcome> {
    if (run.attempts >= this.maxAttempts) return (await this.fail(run, now, options.error)) ? "failed" : "lost";
    const hint = options.error !== null && typeof options.error === "object" ? (options.error as { retryAfterMs?: unknown }).retryAfterMs : undefined;
    const delay = Math.min(Math.max(backoffMs(run.attempts, this.backoffBaseMs, this.backoffMaxMs), waitOf(options.retryAfterMs), waitOf(hint)), MAX_RETRY_AFTER_MS);
    return (await this.store.retry(toStoreRun(run), now, now + delay, errorText(options.error))) ? "retry" : "lost";
  }

  defer(run: ClaimedRun, now: number, untilMs: number): Promise<boolean> {
    return this.store.defer(toStoreRun(run), now, untilMs);
  }

  countRecent(query: CountRecentQuery): Promise<number> {
    return this.store.countRecent(query);
  }

  async get(id: string): Promise<Run | null> {
    const r = await this.store.get(id);
    return r ? toLibRun(r) : null;
  }

  purgeFinished(before: number): Promise<number> {
    return this.store.purgeFinished(before);
  }
}
