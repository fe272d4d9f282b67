import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { App } from "../app";

/**
 * Runs `fn` while holding the named job_locks row (spec "Worker"): taken with the one-statement
 * UPDATE, renewed every third of its TTL while `fn` runs, released (recording last_run_at) after.
 * Another holder, or a lock not yet expired, means this instance skips: `{ ran: false }`.
 * A lock left by a killed process expires and the next caller takes it over.
 */
export async function withJobLock<T>(
  app: Pick<App, "store" | "clock" | "log">,
  name: string,
  holder: string,
  ttlMs: number,
  now: Date,
  fn: (lock: { lost: () => boolean }) => Promise<T>,
): Promise<{ ran: false } | { ran: true; value: T }> {
  const locks = app.store.jobLocks;
  if (!(await locks.take(name, holder, now, ttlMs))) return { ran: false };
  let lost = false;
  // A real timer: renewal is about wall time passing while the job runs. Tests drive the job with
  // a manual clock and never wait this long, so for them the TTL alone decides.
  const renewal = setInterval(() => {
    locks.renew(name, holder, app.clock.now(), ttlMs).then(
      (held) => {
        if (held) return;
        lost = true;
        app.log.warn(`job lock "${name}" was taken over while running; stopping after the work in hand`, { holder });
      },
      // A renewal the database refused: the lock may expire; the work stops if another takes it.
      (err: unknown) => app.log.warn(`job lock "${name}" could not be renewed`, { holder, error: err instanceof Error ? err.message : String(err) }),
    );
  }, Math.max(1000, Math.floor(ttlMs / 3)));
  renewal.unref();
  try {
    return { ran: true, value: await fn({ lost: () => lost }) };
  } finally {
    clearInterval(renewal);
    await locks.release(name, holder, app.clock.now());
  }
}

/** A holder id unique to this process and call site: host, pid and a random suffix. */
export const newHolderId = (): string => `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
