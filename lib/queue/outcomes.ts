import type { App } from "../app";
import { errorMessage, isDatabaseError } from "../core/errors";
import type { FaultTracker } from "../core/faults";
import type { ClaimedRun } from "../db/store";
import { UnsavedOutcome, type Outcome } from "../executor/run";
import { processMetrics } from "../metrics";

/** What the worker's slots do with a run's outcome once executeRun returned (or threw). */
export interface Outcomes {
  /** Stores an outcome the database refused, retrying with back-off until it is stored (or the process gives up on the run). */
  storeLater(unsaved: UnsavedOutcome, run: ClaimedRun): Promise<Outcome | null>;
  /** executeRun settles every failure itself; this is the backstop for one that escaped it. */
  failOutside(run: ClaimedRun, err: unknown): Promise<Outcome | null>;
  /** An attempt that ended (not one lost to another worker or handed back) counts, with its time since the claim. */
  count(run: ClaimedRun, outcome: Outcome | null): void;
  /** A settle that changed nothing: says whether another worker took the run over or it is gone with its applet. */
  reportLost(run: ClaimedRun): Promise<void>;
  /** Hands a run back to the queue, same attempt (a failure leaves it to the lease's end). */
  release(run: ClaimedRun): Promise<void>;
}

export function createOutcomes(
  app: Pick<App, "store" | "clock" | "log">,
  opts: { faults: FaultTracker; pause: (ms: number) => Promise<void>; abandoned: () => boolean },
): Outcomes {
  const { store, clock, log } = app;
  const { faults, pause } = opts;
  const metrics = processMetrics();
  const storeLater = async (unsaved: UnsavedOutcome, run: ClaimedRun): Promise<Outcome | null> => {
    let delay = faults.failed("recording run outcomes", unsaved.cause);
    for (;;) {
      await pause(delay);
      if (opts.abandoned()) return null;
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
  return {
    storeLater,
    async failOutside(run, err) {
      log.error("executor crashed on a run; failing it", { run_id: run.id, error: errorMessage(err) });
      const reason = `executor: ${errorMessage(err)}`;
      const save = async (): Promise<Outcome> =>
        (await store.runs.finish(run, "failed", null, reason, clock.now())) ? { status: "failed", error: reason } : { status: "lost" };
      try {
        return await save();
      } catch (storeErr) {
        return storeLater(new UnsavedOutcome(save, storeErr), run);
      }
    },
    count(run, outcome) {
      const status = outcome?.status;
      if (!status || status === "lost" || status === "released") return;
      metrics.runsFinished.inc({ status });
      const started = Date.parse(run.startedAt ?? run.lockedAt ?? "");
      if (Number.isFinite(started)) metrics.runDuration.observe({ status }, Math.max(0, clock.now().getTime() - started) / 1000);
    },
    async reportLost(run) {
      let exists = true;
      try {
        exists = (await store.runs.get(run.id)) !== null;
      } catch {
        // Cannot tell; say the usual.
      }
      if (exists) log.warn("run was taken over by another worker; its result was not saved", { run_id: run.id });
      else log.info("run was deleted while it ran (its applet was deleted); nothing to record", { run_id: run.id, applet_id: run.appletId });
    },
    async release(run) {
      try {
        await store.runs.release(run, clock.now());
      } catch (err) {
        // Left running: its worker's lease ends with this process, and the next worker recovers it.
        log.warn("could not hand a run back to the queue; it is recovered when this worker's lease expires", { run_id: run.id, error: errorMessage(err) });
      }
    },
  };
}
