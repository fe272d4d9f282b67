import type { Logger } from "../core/log";
import { errorMessage } from "../core/errors";
import type { Store } from "../db/store";

type Notifications = Pick<NonNullable<Store["notifications"]>, "onQueued" | "watchQueue" | "unwatchQueue">;

export interface QueueWakeups {
  /** A slot found nothing to claim: from now on this worker wants to hear of claimable runs. */
  idle(): void;
  /** No slot is idle any more: once that has lasted `busyAfterMs`, it stops asking. */
  busy(): void;
  /** Stops listening and withdraws this worker's row. */
  stop(): Promise<void>;
}

/**
 * Wake-ups for idle slots where the store announces claimable runs (PostgreSQL NOTIFY), which it
 * does only while some worker says it has an idle slot (drizzle-pg/0017): an announcing commit
 * holds the server's one notification lock through its WAL flush, so announcing every run's
 * finish to workers that were all busy serialised their commits. From the moment a slot finds the
 * queue empty this worker's row says so (renewed every `renewMs`, valid `forMs`, so a worker killed
 * with it in place costs announcements for a minute at most); once the row is in and the
 * transactions that may have missed it have ended, the slots look at the queue again, so a run
 * queued just before is not left to the slow poll. The row is withdrawn once no slot has been
 * idle for `busyAfterMs`: a busy spell between two empty looks keeps it (each withdrawal and
 * return is a write, and the return waits for the transactions in progress).
 */
export function startQueueWakeups(opts: {
  notifications: Notifications;
  workerId: string;
  wake: () => void;
  log: Logger;
  forMs?: number;
  renewMs?: number;
  busyAfterMs?: number;
  retryMs?: number;
}): QueueWakeups {
  const { notifications, workerId, wake, log } = opts;
  const forMs = opts.forMs ?? 60_000;
  const renewMs = opts.renewMs ?? 20_000;
  const busyAfterMs = opts.busyAfterMs ?? 1_000;
  const retryMs = opts.retryMs ?? 1_000;
  const unsubscribe = notifications.onQueued(wake);
  let idle = false;
  /** This worker's row is in (as far as this process knows), and since when (performance.now()). */
  let watchedAt: number | null = null;
  let busySince = 0;
  let stopped = false;
  let failing = false;
  let timer: NodeJS.Timeout | null = null;
  let chain: Promise<void> = Promise.resolve();

  const later = (ms: number) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void reconcile();
    }, ms);
    timer.unref();
  };

  /** Brings the row in line with the slots, one database call at a time, in order. */
  const reconcile = (): Promise<void> =>
    (chain = chain.then(async () => {
      if (stopped) return;
      const now = performance.now();
      try {
        if (idle) {
          if (watchedAt !== null && now - watchedAt < renewMs) return later(renewMs - (now - watchedAt));
          const fresh = watchedAt === null;
          await notifications.watchQueue(workerId, forMs, { settle: fresh });
          watchedAt = now;
          if (fresh) wake();
          later(renewMs);
        } else if (watchedAt !== null) {
          const busyFor = now - busySince;
          if (busyFor < busyAfterMs) return later(busyAfterMs - busyFor);
          await notifications.unwatchQueue(workerId);
          watchedAt = null;
        }
        if (failing) log.info("idle slots are woken by announcements again");
        failing = false;
      } catch (err) {
        // Unknown whether the row went in: the next attempt waits for the transactions again.
        if (idle) watchedAt = null;
        if (!failing) log.warn("could not tell the database whether this worker has idle slots; they look at the queue every few seconds meanwhile", { error: errorMessage(err) });
        failing = true;
        later(retryMs);
      }
    }));

  return {
    idle() {
      if (idle) return;
      idle = true;
      void reconcile();
    },
    busy() {
      if (!idle) return;
      idle = false;
      busySince = performance.now();
      void reconcile();
    },
    async stop() {
      unsubscribe();
      await chain;
      stopped = true;
      if (timer) clearTimeout(timer);
      if (watchedAt !== null) await notifications.unwatchQueue(workerId).catch(() => undefined);
      watchedAt = null;
    },
  };
}

/**
 * Tells `wakeups` when the worker has an idle slot and when none is left: returns the function
 * each slot calls with its number as it turns idle (a claim found nothing) or busy (it found a run).
 */
export function slotIdleness(wakeups: Pick<QueueWakeups, "idle" | "busy"> | null): (slot: number, idle: boolean) => void {
  const idleSlots = new Set<number>();
  return (n, idle) => {
    if (idle === idleSlots.has(n)) return;
    if (idle) {
      idleSlots.add(n);
      if (idleSlots.size === 1) wakeups?.idle();
    } else {
      idleSlots.delete(n);
      if (idleSlots.size === 0) wakeups?.busy();
    }
  };
}
