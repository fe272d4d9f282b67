import { createFaultTracker, type FaultTracker } from "../core/faults";
import { errorMessage, isDatabaseError } from "../core/errors";
import type { ClaimedRun } from "../db/store";
import { executeRun, UnsavedOutcome, type ExecutorDeps, type Outcome } from "../executor/run";
import { processMetrics } from "../metrics";
import { createWorkerLease, type WorkerLease, type WorkerReport } from "./lease";
import { createLivenessWatch, type LivenessWatch } from "./liveness";
import { startQueueWakeups } from "./wakeups";

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
  // Where the store announces claimable runs, it does so only while a worker says it has an idle
  // slot (lib/queue/wakeups.ts): a slot is idle from a claim that found nothing to one that found a run.
  const wakeups = store.notifications ? startQueueWakeups({ notifications: store.notifications, workerId: opts.workerId, wake, log }) : null;
  const idleSlots = new Set<number>();
  const setIdle = (n: number, idle: boolean) => {
    if (idle === idleSlots.has(n)) return;
    if (idle) {
      idleSlots.add(n);
      if (idleSlots.size === 1) wakeups?.idle();
    } else {
      idleSlots.delete(n);
      if (idleSlots.size === 0) wakeups?.busy();
    }
  };

  const recoverStale = async ({ gone = [], watch = false }: { gone?: string[]; watch?: boolean } = {}) => {
    try {
      const now = clock.now();
      const earliestClaim = Math.min(now.getTime(), ...claimingSince.values());
      const recovered = await store.runs.recoverStale({
        now,
        stuckBefore: new Date(now.getTime() - stuckAfterMs),
        self: opts.workerId,
        gone,
        holding: { ids: [...held], lockedBefore: new Date(earliestClaim - 1_000) },
      });
      // The workers to probe until the next check (one small read every check, none per probe on SQLite).
      if (watch) liveness.watch(await store.workers.live(now));
      faults.succeeded("recovering runs of stopped workers");
      if (recovered.length === 0) return;
      const said = {
        lease: "requeued runs whose worker's lease expired",
        gone: "requeued runs whose worker's process or database session is gone",
        orphan: "requeued runs this worker claimed but never got (the database connection was cut under the claim)",
        stuck: `requeued runs locked longer than ${stuckAfterMs / 60_000} minutes`,
      } as const;
      for (const reason of ["lease", "gone", "orphan", "stuck"] as const) {
        const runs = recovered.filter((r) => r.reason === reason);
        if (runs.length === 0) continue;
        log.warn(said[reason], {
          count: runs.length,
          workers: [...new Set(runs.map((r) => r.lockedBy))],
          run_ids: runs.slice(0, 20).map((r) => r.id),
        });
      }
      wake();
    } catch (err) {
      faults.failed("recovering runs of stopped workers", err);
    }
  };
  let probing = false;
  const probeLiveness = async () => {
    if (probing || stopping) return;
    probing = true;
    try {
      const gone = await liveness.probe();
      if (gone.length > 0) {
        log.warn("workers are gone (their process or database session ended); recovering their runs", { workers: gone });
        await recoverStale({ gone });
      }
    } catch (err) {
      log.debug("could not probe other workers", { error: errorMessage(err) });
    } finally {
      probing = false;
    }
  };
  let prunedAt = Number.NEGATIVE_INFINITY;
  const pruneWorkers = async () => {
    const now = clock.now().getTime();
    if (now - prunedAt < 3_600_000) return;
    prunedAt = now;
    try {
      await store.workers.prune(new Date(now - 86_400_000));
    } catch {
      prunedAt = Number.NEGATIVE_INFINITY; // tried again at the next check
    }
  };

  // The heartbeat: renews the lease on a real-time timer (a slot busy with a long action does not
  // claim, so claims alone would not keep it fresh). Runs of workers that stopped renewing theirs
  // are recovered on start (a restored database's `running` runs included) and on every check.
  // Started in order (the lease first, so this worker's own runs are never taken for a dead
  // worker's); the slots do not claim before the first heartbeat is stored (`lease.keep`).
  const started = liveness
    .ready()
    .then(() => lease.keep({ force: true }))
    .then(() => recoverStale({ watch: true }));
  // A heartbeat that works while faults are on (space came back) wakes the slots backing off, so
  // they try again now rather than at the end of a back-off that may be 30 s long.
  const heartbeatTimer = setInterval(
    () => {
      const faulty = faults.current() !== null;
      void lease.keep({ force: true }).then((kept) => {
        if (kept && faulty) wake();
      });
    },
    // A third of the lease, and at most 15 s whatever the lease: /api/health calls a heartbeat
    // older than 60 s a stopped worker.
    Math.max(250, Math.min(15_000, Math.floor(leaseMs / 3))),
  );
  heartbeatTimer.unref();
  const staleTimer = setInterval(
    () => {
      void recoverStale({ watch: true }).then(pruneWorkers);
    },
    opts.staleCheckMs ?? Math.min(10_000, Math.max(250, Math.floor(leaseMs / 3))),
  );
  staleTimer.unref();
  const livenessTimer = setInterval(() => void probeLiveness(), opts.livenessProbeMs ?? 1_000);
  livenessTimer.unref();

  /** Stores an outcome the database refused, retrying with back-off until it is stored (or the process gives up on the run). */
  const storeLater = async (unsaved: UnsavedOutcome, run: ClaimedRun): Promise<Outcome | null> => {
    let delay = faults.failed("recording run outcomes", unsaved.cause);
    for (;;) {
      await pause(delay);
      if (abandoned) return null;
      try {
        const outcome = await unsaved.store();
        faults.succeeded("recording run outcomes");
        return outcome;
      } catch (err) {
        if (!isDatabaseError(err)) {
          log.error("could not record a run's outcome", { run_id: run.id, error: errorMessage(err) });
          return null;
        }
        delay = faults.failed("recording run outcomes", err);
      }
    }
  };

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
        outcome = err instanceof UnsavedOutcome ? await storeLater(err, run) : await failOutside(run, err);
      }
      if (outcome?.next) held.add(outcome.next.id);
      claimingSince.delete(n);
      held.delete(run.id);
      inFlight.delete(n);
      countOutcome(run, outcome);
      if (abandoned) break;
      next = outcome?.next ?? null;
      if (outcome?.status === "lost") await reportLost(run);
      // A finished run may unblock the next run of the same applet for the other slots.
      wake();
    }
    // A run claimed together with the last finish goes back to the queue untouched.
    if (next) await release(next);
  };

  /** An attempt that ended (not one lost to another worker or handed back) counts, with its time since the claim. */
  const countOutcome = (run: ClaimedRun, outcome: Outcome | null) => {
    const status = outcome?.status;
    if (!status || status === "lost" || status === "released") return;
    metrics.runsFinished.inc({ status });
    const started = Date.parse(run.startedAt ?? run.lockedAt ?? "");
    if (Number.isFinite(started)) metrics.runDuration.observe({ status }, Math.max(0, clock.now().getTime() - started) / 1000);
  };

  /** executeRun settles every failure itself; this is the backstop for one that escaped it. */
  const failOutside = async (run: ClaimedRun, err: unknown): Promise<Outcome | null> => {
    log.error("executor crashed on a run; failing it", { run_id: run.id, error: errorMessage(err) });
    const reason = `executor: ${errorMessage(err)}`;
    const save = async (): Promise<Outcome> =>
      (await store.runs.finish(run, "failed", null, reason, clock.now())) ? { status: "failed", error: reason } : { status: "lost" };
    try {
      return await save();
    } catch (storeErr) {
      return storeLater(new UnsavedOutcome(save, storeErr), run);
    }
  };

  // A settle that changed nothing: the claim token no longer matches. Either another worker took
  // the run over (its lease or the stuck bound), or the run is gone with its applet.
  const reportLost = async (run: ClaimedRun) => {
    let exists = true;
    try {
      exists = (await store.runs.get(run.id)) !== null;
    } catch {
      // Cannot tell; say the usual.
    }
    if (exists) log.warn("run was taken over by another worker; its result was not saved", { run_id: run.id });
    else log.info("run was deleted while it ran (its applet was deleted); nothing to record", { run_id: run.id, applet_id: run.appletId });
  };

  const release = async (run: ClaimedRun) => {
    try {
      await store.runs.release(run, clock.now());
    } catch (err) {
      // Left running: its worker's lease ends with this process, and the next worker recovers it.
      log.warn("could not hand a run back to the queue; it is recovered when this worker's lease expires", { run_id: run.id, error: errorMessage(err) });
    }
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
      clearInterval(staleTimer);
      clearInterval(livenessTimer);
      wake();
      const all = Promise.all(slots);
      let released: string[] = [];
      if (graceMs === undefined) {
        await all;
      } else {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = await Promise.race([all.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
        clearTimeout(timer);
        if (late) {
          abandoned = true;
          wake();
          released = [...inFlight.values()].map((run) => run.id);
          await Promise.all([...inFlight.values()].map((run) => release(run)));
          if (released.length) log.warn("runs still in flight at the end of the shutdown grace went back to the queue", { run_ids: released });
        }
      }
      clearInterval(heartbeatTimer);
      await wakeups?.stop();
      await lease.end();
      await liveness.close();
      return { released };
    },
  };
}
