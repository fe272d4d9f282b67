import { randomUUID } from "node:crypto";
import { ScheduleError, type Schedule, type ScheduleAdapter, type ScheduleFilter, type SchedulePatch } from "@whenthen/schedules";
import type { App } from "../app";
import type { ScheduledApplet } from "../db/store";
import { storedDefinition, type Definition } from "../definition";
import { POLLED_TRIGGERS } from "../triggers";
import { isPolledType, timingOf } from "./timing";

/**
 * @whenthen/schedules' ScheduleAdapter over the app's own tables: one schedule per enabled polled
 * applet (schedule, rss, poll), read from `applets` joined with `trigger_state`. There is no
 * separate schedules table, so next_run_at lives in one place: trigger_state.
 *
 * - `list({ due: true })`: `next_run_at <= now`, driven by trigger_state_next_run_idx.
 * - `claimDue`: trigger_state.claimDue, the `UPDATE … WHERE next_run_at IS ?` that one worker wins;
 *   it also marks the slot pending until the tick stores its outcome (./tick recoverPendingSlots).
 * - The schedule's timing comes from the trigger plug-in (./timing), so the reconciler's next slot
 *   is the plug-in's `nextRunAt`.
 * - `lastRunAt` / `lastRunStatus` / `lastRunId` are not stored here: a fire's outcome is the
 *   trigger_state row the poll wrote (last_polled_at, last_error) and the run it queued.
 * - Applets are created and deleted by the applet service (validation, webhook tokens, files),
 *   never through this store: `add` and `delete` refuse.
 */
export class AppletScheduleAdapter implements ScheduleAdapter {
  readonly #app: Pick<App, "store" | "clock">;
  readonly #halted: () => boolean;
  /** The stored text of each listed next_run_at: a claim compares that exact text. */
  readonly #listedText = new Map<string, string>();

  constructor(app: Pick<App, "store" | "clock">, opts: { halted?: () => boolean } = {}) {
    this.#app = app;
    this.#halted = opts.halted ?? (() => false);
  }

  async add(schedule: Schedule): Promise<void> {
    throw new ScheduleError(`scheduler: cannot add schedule ${JSON.stringify(schedule.id)}: applet schedules come from saving an applet (lib/applets/service)`);
  }

  async delete(id: string): Promise<boolean> {
    throw new ScheduleError(`scheduler: cannot delete schedule ${JSON.stringify(id)}: delete the applet instead`);
  }

  async get(id: string): Promise<Schedule | null> {
    const [applet, state] = await Promise.all([this.#app.store.applets.get(id), this.#app.store.triggerState.get(id)]);
    if (!applet || !state?.nextRunAt || !isPolledType(applet.triggerType)) return null;
    const def = storedDefinition(applet.definition);
    return {
      id,
      kind: applet.triggerType,
      target: id,
      ...timingOf(applet.triggerType, def.trigger.config, state),
      enabled: applet.enabled,
      nextRunAt: new Date(state.nextRunAt),
      createdAt: new Date(applet.createdAt),
      updatedAt: new Date(applet.updatedAt),
    };
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    // A tick whose job lock was lost stops taking new work; slots it already claimed still run.
    if (this.#halted()) return [];
    const kinds = filter.kind === undefined ? POLLED_TRIGGERS : (Array.isArray(filter.kind) ? filter.kind : [filter.kind]).filter(isPolledType);
    const rows = await this.#app.store.triggerState.listScheduled({
      types: kinds,
      dueAt: filter.due ? (filter.now ?? this.#app.clock.now()).toISOString() : undefined,
      enabledOnly: filter.enabled === true,
      limit: filter.limit,
    });
    const out: Schedule[] = [];
    for (const row of rows) {
      if (filter.enabled === false && row.enabled) continue;
      this.#listedText.set(row.applet_id, row.next_run_at);
      out.push(this.#toSchedule(row));
    }
    return out;
  }

  #toSchedule(row: ScheduledApplet): Schedule {
    const type = row.trigger_type as (typeof POLLED_TRIGGERS)[number];
    let config: unknown;
    try {
      config = (JSON.parse(row.definition) as Definition).trigger?.config;
    } catch {
      config = undefined; // an unreadable definition gets an invalid timing and is disabled by the reconciler
    }
    return {
      id: row.applet_id,
      kind: type,
      target: row.applet_id,
      ...timingOf(type, config, { errorCount: row.error_count }),
      enabled: row.enabled,
      nextRunAt: new Date(row.next_run_at),
      createdAt: new Date(row.created_at),
      updatedAt: new Date(row.updated_at),
    };
  }

  async update(id: string, patch: SchedulePatch): Promise<boolean> {
    const { store, clock } = this.#app;
    const now = (patch.updatedAt ?? clock.now()).toISOString();
    if (!(await store.applets.get(id))) return false;
    if (patch.enabled === false) {
      // The reconciler disables a schedule whose timing cannot be computed; for an applet that is
      // the same as switching it off, which also clears next_run_at.
      await store.applets.setEnabled(id, false, now);
      await store.triggerState.setNextRunAt(id, null, now);
    } else if (patch.enabled === true) {
      await store.applets.setEnabled(id, true, now);
    }
    if (patch.nextRunAt !== undefined && patch.enabled !== false) await store.triggerState.setNextRunAt(id, patch.nextRunAt.toISOString(), now);
    return true;
  }

  async claimDue(id: string, expectedNextRunAt: Date, newNextRunAt: Date): Promise<boolean> {
    // Halted (lock lost, or the worker stopping) while a listed batch is still being worked through:
    // claim nothing more; the slots stay due for the next tick.
    if (this.#halted()) return false;
    const listed = this.#listedText.get(id);
    // A hand-written next_run_at ("…T09:00:00Z") must match as stored, not as re-serialized.
    const expected = listed !== undefined && new Date(listed).getTime() === expectedNextRunAt.getTime() ? listed : expectedNextRunAt.toISOString();
    return this.#app.store.triggerState.claimDue(id, expected, newNextRunAt.toISOString(), this.#app.clock.now().toISOString());
  }

  generateId(): string {
    return randomUUID();
  }

  async ping(): Promise<boolean> {
    try {
      await this.#app.store.jobLocks.get("scheduler_tick");
      return true;
    } catch {
      return false;
    }
  }
}
