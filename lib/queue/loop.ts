import { createFaultTracker, type FaultTracker } from "../core/faults";
import type { ClaimedRun } from "../db/store";
import { executeRun, UnsavedOutcome, type ExecutorDeps, type Outcome } from "../executor/run";
import { processMetrics } from "../metrics";
import { createWorkerLease, startHeartbeat, type WorkerLease, type WorkerReport } from "./lease";
import { createLivenessWatch, type LivenessWatch } from "./liveness";
import { createOutcomes } from "./outcomes";
import { createPauses } from "./pauses";
import { startRecovery } from "./recovery";
import { slotIdleness, startQueueWakeups } from "./wakeups";

/** A live worker's run locked longer than this is taken to be stuck and goes back to the queue (spec: 10 minutes). */
export const STUCK_AFTER_MS = 10 * 60_000;

export interface ExecutorLoopOptions {
  /** This worker's id, in `workers` and in the `locked_by` of its runs (lib/queue/lease newWorkerId). */
  workerId: string;
  /** Runs executed at once (WORKER_CONCURRENCY). */
  concurrency: number;
  /** Real-time pause when the queue is empty (spec: 500 ms). */
  idleMs?: number;
  /** The worker's lease (WORKER_LEASE_SECONDS); renewed every third of it (at most 15 s apart). Default 30 s. */
  leaseMs?: number;
  /** How often running runs are checked for a dead holder. Default a third of the lease, at most 10 s. */
  staleCheckMs?: number;
  /**
   * How often the workers the last check saw are probed for a process or session that is gone
   * (lib/queue/liveness.ts): a dead worker's runs are recovered within seconds, not a lease. Default 1 s.
   */
  livenessProbeMs?: number;
  /** Tests: the liveness watch to use instead of the store's (PostgreSQL session) and this machine's pids. */
  liveness?: LivenessWatch;
  /** A run locked longer than this goes back to queued even when its worker is alive. */
  stuckAfterMs?: number;
  /** Shared with the rest of the process, so the heartbeat reports every fault; one of its own by default. */
  faults?: FaultTracker;
  /** What the heartbeat publishes besides the lease (the SMTP port; the counters by default). */
  report?: () => Promise<WorkerReport>;
}

export interface ExecutorLoop {
  /** Lets idle slots look at the queue now instead of after their pause. */
  wake(): void;
  /**
   * Stops claiming at once. Resolves when every run in flight has settled or, after `graceMs`,
   * hands the runs still in flight back to the queue (same attempt) and resolves with their ids.
   */
  stop(opts?: { graceMs?: number }): Promise<{ released: string[] }>;
  readonly lease: WorkerLease;
  readonly faults: FaultTracker;
  /**
   * Resolves once the worker is visible to the others: its liveness (its own PostgreSQL session, or
   * its pid) is set up and its first heartbeat is stored. Nothing is claimed before.
   */
  readonly started: Promise<void>;
}

/**
 * `concurrency` slots, each claiming and executing one run at a time. The claim statement itself
 * keeps runs of one applet in order (one running per applet), so slots need no coordination.
 *
 * Nothing is claimed without a fresh lease, and a database that refuses a claim, a settle or the
 * heartbeat (a full disk) is a fault: reported, backed off, and retried until it works again. A run
 * whose outcome could not be stored is not executed again; its outcome is stored when it can be.
 */
export function startExecutorLoop(deps: ExecutorDeps, opts: ExecutorLoopOptions): ExecutorLoop {
  const { store, clock, log } = deps.app;
  const idleMs = opts.idleMs ?? 500;
  const leaseMs = opts.leaseMs ?? 30_000;
  const stuckAfterMs = opts.stuckAfterMs ?? STUCK_AFTER_MS;
  const faults = opts.faults ?? createFaultTracker({ clock, log });
  const liveness = opts.liveness ?? createLivenessWatch({ self: opts.workerId, session: store.workers.openLivenessSession?.() });
  const lease = createWorkerLease(deps.app, { workerId: opts.workerId, leaseMs, faults, report: opts.report, liveness: () => liveness.mine() });
  const metrics = processMetrics();
  let stopping = false;
  /** Set when stop's grace ran out: the runs still executing were handed back and are not ours. */
  let abandoned = false;
  const inFlight = new Map<number, ClaimedRun>();
  /**
   * Runs this worker's slots hold (executing, or claimed with the last finish and next in line), and
   * since when each busy slot may be claiming (a claim's locked_at is never earlier): the stale
   * check hands back this worker's other running runs, claimed by a statement whose answer a cut
   * connection lost, only when they were locked before every claim still in flight.
   */
  const held = new Set<string>();
  const claimingSince = new Map<number, number>();
  const { pause, wake } = createPauses();
  const outcomes = createOutcomes(deps.app, { faults, pause, abandoned: () => abandoned });
  // Where the store announces claimable runs, it does so only while a worker says it has an idle
  // slot (lib/queue/wakeups.ts): a slot is idle from a claim that found nothing to one that found a run.
  const wakeups = store.notifications ? startQueueWakeups({ notifications: store.notifications, workerId: opts.workerId, wake, log }) : null;
  const setIdle = slotIdleness(wakeups);

  const recovery = startRecovery(deps.app, {
    workerId: opts.workerId,
    faults,
    liveness,
    stuckAfterMs,
    staleCheckMs: opts.staleCheckMs ?? Math.min(10_000, Math.max(250, Math.floor(leaseMs / 3))),
    livenessProbeMs: opts.livenessProbeMs ?? 1_000,
    holding: { held, claimingSince },
    wake,
  });

  // The heartbeat: renews the lease on a real-time timer (a slot busy with a long action does not
  // claim, so claims alone would not keep it fresh). Runs of workers that stopped renewing theirs
  // are recovered on start (a restored database's `running` runs included) and on every check.
  // Started in order (the lease first, so this worker's own runs are never taken for a dead
  // worker's); the slots do not claim before the first heartbeat is stored (`lease.keep`).
  const started = liveness
    .ready()
    .then(() => lease.keep({ force: true }))
    .then(() => recovery.check({ watch: true }));
  const heartbeat = startHeartbeat(lease, { leaseMs, faults, wake });
  const slot = async (n: number) => {
    await started;
    let next: ClaimedRun | null = null;
    while (!stopping) {
      let run: ClaimedRun | null = next;
      next = null;
      if (!run) {
        if (!(await lease.keep())) {
          await pause(faults.failed("claiming runs", new Error("not claiming: the worker's lease could not be renewed")));
          continue;
        }
        if (!liveness.healthy()) {
          // Our lock is free while the session reconnects: another worker may take us for dead.
          await pause(faults.failed("claiming runs", new Error("not claiming: the worker's liveness session is reconnecting")));
          continue;
        }
        const now = clock.now();
        claimingSince.set(n, now.getTime());
        try {
          run = await store.runs.claim(opts.workerId, now);
          if (run) held.add(run.id);
          faults.succeeded("claiming runs");
        } catch (err) {
          await pause(faults.failed("claiming runs", err));
          continue;
        } finally {
          claimingSince.delete(n);
        }
      }
      if (!run) {
        setIdle(n, true);
        await pause(idleMs);
        continue;
      }
      setIdle(n, false);
      inFlight.set(n, run);
      metrics.runsStarted.inc();
      let outcome: Outcome | null;
      // The finish claims the next run: no claim of it is stamped before now.
      claimingSince.set(n, clock.now().getTime());
      try {
        // While stopping, finish without claiming more: the loop is about to end.
        outcome = await executeRun(deps, run, { claimNextAs: stopping ? undefined : opts.workerId });
      } catch (err) {
        outcome = err instanceof UnsavedOutcome ? await outcomes.storeLater(err, run) : await outcomes.failOutside(run, err);
      }
      if (outcome?.next) held.add(outcome.next.id);
      claimingSince.delete(n);
      held.delete(run.id);
      inFlight.delete(n);
      outcomes.count(run, outcome);
      if (abandoned) break;
      next = outcome?.next ?? null;
      if (outcome?.status === "lost") await outcomes.reportLost(run);
      // A finished run may unblock the next run of the same applet for the other slots.
      wake();
    }
    // A run claimed together with the last finish goes back to the queue untouched.
    if (next) await outcomes.release(next);
  };

  const slots = Array.from({ length: Math.max(1, opts.concurrency) }, (_, i) => slot(i));

  // A caller that does not wait for the start must not turn its failure (the slots report it) into an unhandled rejection.
  const startedView = started.then(() => undefined);
  startedView.catch(() => undefined);
  return {
    wake,
    lease,
    faults,
    started: startedView,
    async stop({ graceMs } = {}) {
      stopping = true;
      recovery.stop();
      wake();
      let released: string[] = [];
      if (!(await settledWithin(Promise.all(slots), graceMs))) {
        abandoned = true;
        wake();
        released = [...inFlight.values()].map((run) => run.id);
        await Promise.all([...inFlight.values()].map((run) => outcomes.release(run)));
        if (released.length) log.warn("runs still in flight at the end of the shutdown grace went back to the queue", { run_ids: released });
      }
      heartbeat.stop();
      await wakeups?.stop();
      await lease.end();
      await liveness.close();
      return { released };
    },
  };
}

/** Whether `work` settles within `ms` (always, waiting as long as it takes, when `ms` is undefined). */
async function settledWithin(work: Promise<unknown>, ms: number | undefined): Promise<boolean> {
  if (ms === undefined) {
    await work;
    return true;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = await Promise.race([work.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return settled;
}
