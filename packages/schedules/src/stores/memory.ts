import { ScheduleConflictError } from "../errors";
import type { Schedule, ScheduleAdapter, ScheduleClock, ScheduleFilter, SchedulePatch } from "../types";
import { applyPatch, assertClaimDates, assertLimit, assertPatchedTiming, cloneSchedule, kindList, rowForAdd, systemNow, touchesTiming } from "./shared";

export interface MemoryScheduleStoreOptions {
  /** Used for `list({ due: true })` without `now` and for `updatedAt` defaults. */
  clock?: ScheduleClock;
}

/**
 * In-process store for tests and single-process development. Records are copied in and out
 * through the same JSON round trip as the database stores, so a test on memory sees what SQL
 * would give back. `list` scans every record: fine at test sizes, not meant for large stores.
 */
export class MemoryScheduleStore implements ScheduleAdapter {
  readonly #schedules = new Map<string, Schedule>();
  readonly #now: () => Date;

  constructor(options: MemoryScheduleStoreOptions = {}) {
    const clock = options.clock;
    this.#now = clock ? () => clock.now() : systemNow;
  }

  async add(schedule: Schedule): Promise<void> {
    rowForAdd(schedule);
    if (this.#schedules.has(schedule.id)) {
      throw new ScheduleConflictError(`schedules(memory): a schedule with id ${JSON.stringify(schedule.id)} already exists`);
    }
    this.#schedules.set(schedule.id, cloneSchedule(schedule));
  }

  async get(id: string): Promise<Schedule | null> {
    const schedule = this.#schedules.get(id);
    return schedule ? cloneSchedule(schedule) : null;
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    assertLimit(filter.limit);
    const kinds = kindList(filter.kind);
    const dueAt = filter.due ? (filter.now ?? this.#now()).getTime() : undefined;
    const matches = [...this.#schedules.values()].filter(
      (s) =>
        (kinds === undefined || kinds.includes(s.kind)) &&
        (filter.enabled === undefined || s.enabled === filter.enabled) &&
        (dueAt === undefined || s.nextRunAt.getTime() <= dueAt),
    );
    matches.sort((a, b) => a.nextRunAt.getTime() - b.nextRunAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return matches.slice(0, filter.limit ?? matches.length).map(cloneSchedule);
  }

  async update(id: string, patch: SchedulePatch): Promise<boolean> {
    const current = this.#schedules.get(id);
    if (!current) return false;
    if (touchesTiming(patch)) assertPatchedTiming(current, patch);
    this.#schedules.set(id, applyPatch(current, patch, this.#now()));
    return true;
  }

  async delete(id: string): Promise<boolean> {
    return this.#schedules.delete(id);
  }

  async claimDue(id: string, expectedNextRunAt: Date, newNextRunAt: Date): Promise<boolean> {
    assertClaimDates(expectedNextRunAt, newNextRunAt);
    // No await between the check and the write: within one process this is atomic.
    const current = this.#schedules.get(id);
    if (!current || !current.enabled || current.nextRunAt.getTime() !== expectedNextRunAt.getTime()) return false;
    current.nextRunAt = new Date(newNextRunAt.getTime());
    return true;
  }

  generateId(): string {
    return globalThis.crypto.randomUUID();
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}
}
