import type { App } from "../app";
import { errorMessage } from "../core/errors";
import type { FaultTracker } from "../core/faults";
import type { LivenessWatch } from "./liveness";

/** What the worker's slots hold and since when they may be claiming: the stale check must not hand those back. */
export interface HeldRuns {
  /** Runs this worker's slots hold (executing, or claimed with the last finish and next in line). */
  held: ReadonlySet<string>;
  /** Since when each busy slot may be claiming (a claim's locked_at is never earlier). */
  claimingSince: ReadonlyMap<number, number>;
}

export interface RecoveryOptions {
  workerId: string;
  faults: FaultTracker;
  liveness: LivenessWatch;
  /** A run locked longer than this goes back to queued even when its worker is alive. */
  stuckAfterMs: number;
  /** How often running runs are checked for a dead holder. */
  staleCheckMs: number;
  /** How often the workers the last check saw are probed for a process or session that is gone. */
  livenessProbeMs: number;
  holding: HeldRuns;
  /** Called when runs went back to the queue: idle slots look again. */
  wake: () => void;
}

export interface Recovery {
  /** One check now (the first one at the worker's start; `watch` also refreshes the workers to probe). */
  check(opts?: { watch?: boolean }): Promise<void>;
  /** Stops the periodic checks and probes. */
  stop(): void;
}


/**
 * Brings back the runs nobody will settle: runs of workers whose lease expired, whose process or
 * database session is gone (probed every `livenessProbeMs`, so a killed worker's runs return in
 * seconds), runs this worker claimed but never got, and runs locked past the stuck bound. Also
 * prunes workers not seen for a day, once an hour.
 */
export function startRecovery(app: Pick<App, "store" | "clock" | "log">, opts: RecoveryOptions): Recovery {
  const { store, clock, log } = app;
  const { faults, liveness, holding, stuckAfterMs } = opts;
  let stopped = false;
  const said = {
    lease: "requeued runs whose worker's lease expired",
    gone: "requeued runs whose worker's process or database session is gone",
    orphan: "requeued runs this worker claimed but never got (the database connection was cut under the claim)",
    stuck: `requeued runs locked longer than ${stuckAfterMs / 60_000} minutes`,
  } as const;

  const recover = async ({ gone = [], watch = false }: { gone?: string[]; watch?: boolean } = {}) => {
    try {
      const now = clock.now();
      const earliestClaim = Math.min(now.getTime(), ...holding.claimingSince.values());
      const recovered = await store.runs.recoverStale({
        now,
        stuckBefore: new Date(now.getTime() - stuckAfterMs),
        self: opts.workerId,
        gone,
        holding: { ids: [...holding.held], lockedBefore: new Date(earliestClaim - 1_000) },
      });
      // The workers to probe until the next check (one small read every check, none per probe on SQLite).
      if (watch) liveness.watch(await store.workers.live(now));
      faults.succeeded("recovering runs of stopped workers");
      if (recovered.length === 0) return;
      for (const reason of ["lease", "gone", "orphan", "stuck"] as const) {
        const runs = recovered.filter((r) => r.reason === reason);
        if (runs.length === 0) continue;
        log.warn(said[reason], {
          count: runs.length,
          workers: [...new Set(runs.map((r) => r.lockedBy))],
          run_ids: runs.slice(0, 20).map((r) => r.id),
        });
      }
      opts.wake();
    } catch (err) {
      faults.failed("recovering runs of stopped workers", err);
    }
  };

  let probing = false;
  const probe = async () => {
    if (probing || stopped) return;
    probing = true;
    try {
      const gone = await liveness.probe();
      if (gone.length > 0) {
        log.warn("workers are gone (their process or database session ended); recovering their runs", { workers: gone });
        await recover({ gone });
      }
    } catch (err) {
      log.debug("could not probe other workers", { error: errorMessage(err) });
    } finally {
      probing = false;
    }
  };

  let prunedAt = Number.NEGATIVE_INFINITY;
  const prune = async () => {
    const now = clock.now().getTime();
    if (now - prunedAt < 3_600_000) return;
    prunedAt = now;
    try {
      await store.workers.prune(new Date(now - 86_400_000));
    } catch {
      prunedAt = Number.NEGATIVE_INFINITY; // tried again at the next check
    }
  };

  const staleTimer = setInterval(() => void recover({ watch: true }).then(prune), opts.staleCheckMs);
  staleTimer.unref();
  const livenessTimer = setInterval(() => void probe(), opts.livenessProbeMs);
  livenessTimer.unref();
  return {
    check: (o = {}) => recover(o),
    stop() {
      stopped = true;
      clearInterval(staleTimer);
      clearInterval(livenessTimer);
    },
  };
}
