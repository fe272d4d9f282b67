import type { App } from "../app";
import { withJobLock } from "../tick/locks";

export const QUEUE_VACUUM_LOCK = "queue_vacuum";
/** How often a worker looks (worker/index.ts); one worker at a time vacuums, under the job lock. */
export const QUEUE_VACUUM_EVERY_MS = 5_000;
/** Rows changed or gone since the last vacuum before the next one: a few pages of dead index entries. */
export const QUEUE_VACUUM_MIN_CHANGES = 1_000;
/** At most this share of one core's time goes to vacuuming: the pause after a vacuum is its duration times (1 / share - 1). */
const MAX_SHARE = 0.05;
const LOCK_TTL_MS = 10 * 60_000;

/**
 * The queue's own vacuum (PostgreSQL; see MaintenanceStore.vacuumQueue). Each call looks whether
 * enough runs left the queue since the last vacuum and vacuums under the job lock; after a vacuum
 * that took `ms` it waits at least 19 × ms before the next, so a long history (whose indexes
 * VACUUM reads whole) costs at most 5 % of a core. Returns null where the store has no such
 * maintenance (SQLite removes index entries with their rows).
 */
export function createQueueVacuum(
  app: Pick<App, "store" | "clock" | "log">,
  holder: string,
): (() => Promise<{ ran: boolean; vacuumed: boolean; ms: number }>) | null {
  const maintenance = app.store.maintenance;
  if (!maintenance.vacuumQueue) return null;
  const vacuum = maintenance.vacuumQueue.bind(maintenance);
  let notBefore = Number.NEGATIVE_INFINITY;
  return async () => {
    const now = app.clock.now();
    if (now.getTime() < notBefore) return { ran: false, vacuumed: false, ms: 0 };
    const r = await withJobLock(app, QUEUE_VACUUM_LOCK, holder, LOCK_TTL_MS, now, () => vacuum({ minChanges: QUEUE_VACUUM_MIN_CHANGES }));
    if (!r.ran) return { ran: false, vacuumed: false, ms: 0 };
    if (r.value.vacuumed) notBefore = app.clock.now().getTime() + r.value.ms * (1 / MAX_SHARE - 1);
    return { ran: true, ...r.value };
  };
}
