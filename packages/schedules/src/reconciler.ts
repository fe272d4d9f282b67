import { ScheduleError, ScheduleValidationError, UnreadableScheduleInput } from "./errors";
import { nextRunAfter } from "./timing";
import type { Schedule, ScheduleAdapter, ScheduleClock, ScheduleKind } from "./types";

export const RUN_STATUS = {
  triggered: "triggered",
  errored: "errored",
  skippedOverlap: "skipped:overlap",
  /**
   * Its timing cannot produce a next run, or its stored input is not JSON (edited in the database
   * by hand, say): it is disabled.
   */
  invalid: "errored:invalid-schedule",
} as const;

export interface ScheduleReconcilerOptions {
  adapter: ScheduleAdapter;
  /** The kinds this reconciler fires; every kind when absent. */
  kinds?: readonly ScheduleKind[];
  /**
   * Starts the work a schedule stands for. A string result (or an object with a string `id`) is
   * recorded as `lastRunId`. A throw (or rejection) records `lastRunStatus: "errored"`.
   */
  triggerFn: (schedule: Schedule) => unknown;
  /** When it resolves true the fire is skipped (the slot is still consumed) as "skipped:overlap". */
  hasPendingOrRunning?: (schedule: Schedule) => boolean | Promise<boolean>;
  /**
   * Told about every failure inside a tick; the tick itself carries on with the next schedule.
   * Default: console.error.
   */
  onError?: (error: unknown, schedule?: Schedule) => void;
  /** Default `{ now: () => new Date() }`; `tick(now)` overrides it per call. */
  clock?: ScheduleClock;
  /** Due schedules read per list call. Default 500. */
  batchSize?: number;
  /** Upper bound on schedules handled by one tick (the rest wait for the next). Default unbounded. */
  maxPerTick?: number;
  /** Schedules handled at once within a tick. Default 1 (fires in `nextRunAt` order). */
  concurrency?: number;
  /**
   * Reads interval strings when computing the next run (e.g. station-signal's `parseInterval`);
   * the package's own `parseInterval` by default. Stores validate with the package's parser.
   */
  parseInterval?: (interval: string) => number;
  /** Where the one-time "no claimDue" warning goes. Default console. */
  logger?: { warn(message: string): void };
}

/** What one tick did, by schedule id. A schedule appears in at most one list. */
export interface TickSummary {
  /** Claimed, and triggerFn returned. */
  fired: string[];
  /** Claimed, but hasPendingOrRunning said a run is still pending or running. */
  skipped: string[];
  /** Claimed (or could not be advanced), and triggerFn or a check threw. */
  errored: string[];
  /** Another reconciler claimed the slot first, or the schedule changed since it was listed. */
  lost: string[];
}

const DEFAULT_BATCH_SIZE = 500;

/** Ids whose fallback (no claimDue) claim is in progress, per adapter object. */
const fallbackClaims = new WeakMap<ScheduleAdapter, Set<string>>();

const runIdOf = (result: unknown): string | undefined => {
  if (typeof result === "string") return result;
  if (typeof result === "object" && result !== null && typeof (result as { id?: unknown }).id === "string") {
    return (result as { id: string }).id;
  }
  return undefined;
};

/**
 * The polling + claim + trigger loop. A runner builds one and calls `tick()` from its poll loop;
 * several runners (processes, machines) may tick against one store: each slot fires at most once.
 */
export class ScheduleReconciler {
  readonly #options: ScheduleReconcilerOptions;
  readonly #kinds: readonly ScheduleKind[] | undefined;
  readonly #batchSize: number;
  readonly #maxPerTick: number;
  readonly #concurrency: number;
  #warnedNoClaim = false;

  constructor(options: ScheduleReconcilerOptions) {
    const positive = (name: string, value: number | undefined, fallback: number): number => {
      if (value === undefined) return fallback;
      if (!(value === Infinity || (Number.isSafeInteger(value) && value > 0))) {
        throw new ScheduleError(`schedules: reconciler option ${name} must be a positive integer, got ${String(value)}`);
      }
      return value;
    };
    this.#options = options;
    this.#kinds = options.kinds ? [...options.kinds] : undefined;
    this.#batchSize = positive("batchSize", options.batchSize, DEFAULT_BATCH_SIZE);
    this.#maxPerTick = positive("maxPerTick", options.maxPerTick, Infinity);
    this.#concurrency = positive("concurrency", options.concurrency, 1);
  }

  /**
   * Fires every due, enabled schedule of this reconciler's kinds whose slot it wins. Rejects only
   * when listing fails (the store is unreachable); per-schedule failures go to `onError` and the
   * summary.
   */
  async tick(now: Date = this.#options.clock?.now() ?? new Date()): Promise<TickSummary> {
    const summary: TickSummary = { fired: [], skipped: [], errored: [], lost: [] };
    const handled = new Set<string>();
    while (handled.size < this.#maxPerTick) {
      const limit = Math.min(this.#batchSize, this.#maxPerTick - handled.size);
      const due = await this.#options.adapter.list({ enabled: true, due: true, now, kind: this.#kinds, limit });
      // A schedule still listed after it was handled could not be advanced (its claim threw);
      // only new ones count as progress, so such a schedule cannot spin the tick.
      const fresh = due.filter((s) => !handled.has(s.id) && (this.#kinds === undefined || this.#kinds.includes(s.kind)));
      for (const s of fresh) handled.add(s.id);
      await this.#forEach(fresh, (s) => this.#fire(s, now, summary));
      if (fresh.length === 0 || due.length < limit) break;
    }
    return summary;
  }

  async #forEach(schedules: Schedule[], fn: (s: Schedule) => Promise<void>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < schedules.length) await fn(schedules[next++] as Schedule);
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, schedules.length) }, worker));
  }

  async #fire(schedule: Schedule, now: Date, summary: TickSummary): Promise<void> {
    if (schedule.nextRunAt.getTime() > now.getTime()) {
      // A store that read the record after another runner advanced it can list it as due; its
      // slot is already taken, and claiming the new slot early would fire it twice.
      summary.lost.push(schedule.id);
      return;
    }
    let next: Date;
    try {
      if (schedule.input instanceof UnreadableScheduleInput) {
        throw new ScheduleValidationError(`schedules: schedule ${JSON.stringify(schedule.id)}: stored input is not valid JSON (${schedule.input.message})`);
      }
      next = nextRunAfter(schedule, now, { parseInterval: this.#options.parseInterval });
    } catch (err) {
      // Left enabled it would be listed, and fail, on every tick, ahead of the valid ones.
      this.#report(err, schedule);
      summary.errored.push(schedule.id);
      if (err instanceof ScheduleValidationError) {
        await this.#record(schedule, { enabled: false, lastRunStatus: RUN_STATUS.invalid, updatedAt: now });
      }
      return;
    }
    let claimed: boolean;
    try {
      claimed = await this.#claim(schedule, next);
    } catch (err) {
      // The store failed: the slot is not consumed, so nothing fires; the next tick retries.
      this.#report(err, schedule);
      summary.errored.push(schedule.id);
      return;
    }
    if (!claimed) {
      summary.lost.push(schedule.id);
      return;
    }

    try {
      if (this.#options.hasPendingOrRunning && (await this.#options.hasPendingOrRunning(schedule))) {
        summary.skipped.push(schedule.id);
        await this.#record(schedule, { lastRunStatus: RUN_STATUS.skippedOverlap, updatedAt: now });
        return;
      }
    } catch (err) {
      this.#report(err, schedule);
      summary.errored.push(schedule.id);
      await this.#record(schedule, { lastRunAt: now, lastRunStatus: RUN_STATUS.errored, lastRunId: null, updatedAt: now });
      return;
    }

    let status: string = RUN_STATUS.triggered;
    let runId: string | undefined;
    try {
      runId = runIdOf(await this.#options.triggerFn(schedule));
      summary.fired.push(schedule.id);
    } catch (err) {
      status = RUN_STATUS.errored;
      this.#report(err, schedule);
      summary.errored.push(schedule.id);
    }
    await this.#record(schedule, { lastRunAt: now, lastRunStatus: status, lastRunId: runId ?? null, updatedAt: now });
  }

  async #claim(schedule: Schedule, newNextRunAt: Date): Promise<boolean> {
    const { adapter } = this.#options;
    if (adapter.claimDue) return adapter.claimDue(schedule.id, schedule.nextRunAt, newNextRunAt);
    if (!this.#warnedNoClaim) {
      this.#warnedNoClaim = true;
      (this.#options.logger ?? console).warn(
        "schedules: the schedule store has no claimDue(); falling back to a read-compare-update that is atomic only within this process. Fine for one process, unsafe when several processes share the store: a slot may fire more than once.",
      );
    }
    // Read-compare-update, made atomic within this process by marking the id as being claimed
    // (shared by every reconciler on this adapter object); across processes nothing protects it.
    let claiming = fallbackClaims.get(adapter);
    if (!claiming) fallbackClaims.set(adapter, (claiming = new Set()));
    if (claiming.has(schedule.id)) return false;
    claiming.add(schedule.id);
    try {
      const current = await adapter.get(schedule.id);
      if (!current || !current.enabled || current.nextRunAt.getTime() !== schedule.nextRunAt.getTime()) return false;
      // Spec-shaped adapters resolve void; only an explicit false means the schedule is gone.
      return (await adapter.update(schedule.id, { nextRunAt: newNextRunAt })) !== false;
    } finally {
      claiming.delete(schedule.id);
    }
  }

  async #record(schedule: Schedule, patch: Parameters<ScheduleAdapter["update"]>[1]): Promise<void> {
    try {
      await this.#options.adapter.update(schedule.id, patch);
    } catch (err) {
      this.#report(err, schedule);
    }
  }

  #report(err: unknown, schedule: Schedule): void {
    try {
      if (this.#options.onError) this.#options.onError(err, schedule);
      else console.error(`schedules: schedule ${JSON.stringify(schedule.id)} (${schedule.kind} ${schedule.target}):`, err);
    } catch {
      // A throwing error handler must not stop the tick for the remaining schedules.
    }
  }
}
