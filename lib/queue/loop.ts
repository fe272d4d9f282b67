import type { ClaimedRun } from "../db/repos/runs";
import { executeRun, type ExecutorDeps } from "../executor/run";

export interface ExecutorLoopOptions {
  workerId: string;
  /** Runs executed at once (WORKER_CONCURRENCY). */
  concurrency: number;
  /** Real-time pause when the queue is empty (spec: 500 ms). */
  idleMs?: number;
  /** How often running runs are checked for a dead holder. */
  staleCheckMs?: number;
  /** A run whose lock is older than this goes back to queued (spec: 10 minutes). */
  staleAfterMs?: number;
}

export interface ExecutorLoop {
  /** Lets idle slots look at the queue now instead of after their pause. */
  wake(): void;
  /** Stops claiming; resolves when every run in flight has settled. */
  stop(): Promise<void>;
}

/**
 * `concurrency` slots, each claiming and executing one run at a time. The claim statement itself
 * keeps runs of one applet in order (one running per applet), so slots need no coordination.
 */
export function startExecutorLoop(deps: ExecutorDeps, opts: ExecutorLoopOptions): ExecutorLoop {
  const { repos, clock, log } = deps.app;
  const idleMs = opts.idleMs ?? 500;
  const staleAfterMs = opts.staleAfterMs ?? 10 * 60_000;
  let stopping = false;
  const waiters = new Set<() => void>();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  const wake = () => [...waiters].forEach((w) => w());

  const requeueStale = () => {
    const n = repos.runs.requeueStale(new Date(clock.now().getTime() - staleAfterMs), clock.now());
    if (n > 0) {
      log.warn("requeued runs whose worker stopped answering", { count: n });
      wake();
    }
  };
  requeueStale();
  const staleTimer = setInterval(requeueStale, opts.staleCheckMs ?? 30_000);
  staleTimer.unref();

  const slot = async (n: number) => {
    const id = `${opts.workerId}/${n}`;
    let next: ClaimedRun | null = null;
    while (!stopping) {
      let run = next;
      next = null;
      try {
        run ??= repos.runs.claim(id, clock.now());
      } catch (err) {
        log.error("claim failed", { error: err });
        await pause(idleMs);
        continue;
      }
      if (!run) {
        await pause(idleMs);
        continue;
      }
      try {
        // While stopping, finish without claiming more: the loop is about to end.
        const outcome = await executeRun(deps, run, { claimNextAs: stopping ? undefined : id });
        next = outcome.next ?? null;
        if (outcome.status === "lost") log.warn("run was taken over by another worker; its result was not saved", { run_id: run.id });
        // A finished run may unblock the next run of the same applet for the other slots.
        wake();
      } catch (err) {
        // A bug, not an action failure: leave the run to the stale-lock rule rather than guess.
        log.error("executor crashed on a run", { run_id: run.id, error: err });
      }
    }
    // A run claimed together with the last finish goes back to the queue untouched.
    if (next) repos.runs.release(next, clock.now());
  };
  const slots = Array.from({ length: Math.max(1, opts.concurrency) }, (_, i) => slot(i));

  return {
    wake,
    async stop() {
      stopping = true;
      clearInterval(staleTimer);
      wake();
      await Promise.all(slots);
    },
  };
}
