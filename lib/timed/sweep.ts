/**
 * The worker's sweep of due planned runs: @vibedout/automations' sweepDue over the
 * app's store (lib/timed/scheduler). Each due run is checked against the world as it is now (the
 * lateness window, the applet still enabled, the frequency cap, the anchor guard) and then
 * dispatched: its `runs` row is queued and the executor loop runs it like any other run. Nothing
 * here holds an executor slot: a wait is a row with a due time, which survives restarts.
 */
import { anchorUnchanged, sweepDue, type Guard, type Rule, type SweepReport } from "@vibedout/automations";
import type { App } from "../app";
import { errorMessage } from "../core/errors";
import { checkDefinition, timedAction, type Definition } from "../definition";
import { ruleOrThrow, TIMED_ACTION } from "./rule";
import { StoreScheduler, type StoreSchedulerOptions } from "./scheduler";
import { resumeDueWaits } from "../waits/tick";

export interface SweepDeps {
  app: Pick<App, "store" | "clock" | "log">;
  scheduler?: StoreSchedulerOptions;
  /** Runs claimed per sweep (default 100). */
  limit?: number;
}

/**
 * One sweep at the clock's now, repeated while it found a full batch. Returns the summed report.
 */
export async function sweepPlannedRuns(deps: SweepDeps): Promise<SweepReport> {
  const { store, clock } = deps.app;
  const scheduler = new StoreScheduler(store.plannedRuns, deps.scheduler);
  const limit = deps.limit ?? 100;
  const total: SweepReport = { claimed: 0, done: 0, skipped: 0, failed: 0, retried: 0, deferred: 0, lost: 0 };
  for (;;) {
    // Definitions are read once per sweep: what an applet is now (enabled, cap, guard), not when planned.
    const definitions = new Map<string, Definition>();
    const loadRule = async (appletId: string): Promise<Rule | null> => {
      const applet = await store.applets.get(appletId);
      if (!applet) return null;
      const checked = checkDefinition(applet.definition);
      if (!checked.ok) throw new Error(`the applet's definition is invalid: ${checked.problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`);
      definitions.set(appletId, checked.definition);
      return ruleOrThrow(appletId, checked.definition, { eventType: "event", enabled: applet.enabled });
    };
    // The plan was made for a moment: is the record still then? The newest plan of this step for
    // the record holds its anchor now; a record that reached a newer version without a plan (a
    // cancellation) has none. Runs anchored on their event's arrival, or with the guard off, pass.
    const sameAnchor = anchorUnchanged(async (run) => {
      const latest = await store.plannedRuns.latest(run.cancelKey, run.stepId);
      if (latest.reachedVersion !== null && latest.subjectVersion !== null && latest.reachedVersion > latest.subjectVersion) return null;
      return latest.anchorAt;
    });
    const guard: Guard = (run, ctx) => {
      const timing = (() => { const def = definitions.get(run.ruleId); return def ? timedAction(def, Number(run.params.actionIndex))?.timing : undefined; })();
      if (!timing || timing.guard_anchor === false || (timing.anchor ?? "event") === "event") return undefined;
      return sameAnchor(run, ctx);
    };
    const report = await sweepDue({
      scheduler,
      loadRule,
      // Dispatching is the send: `complete` queues the run's row for the executor.
      actions: { [TIMED_ACTION]: () => undefined },
      guards: [guard],
      now: clock.now().getTime(),
      clock: () => clock.now().getTime(),
      limit,
    });
    for (const k of Object.keys(total) as (keyof SweepReport)[]) total[k] += report[k];
    if (report.claimed < limit) return total;
  }
}

export interface TimedSweeper {
  /** Sweeps now instead of at the end of the pause. */
  wake(): void;
  stop(): Promise<void>;
}

/**
 * Sweeps every `intervalMs` (real time, default 1 s) and calls `onDispatched` when runs were
 * queued (the executor loop's wake). Several workers may sweep at once: claims are disjoint.
 */
export function startTimedSweeper(deps: SweepDeps & { intervalMs?: number; onDispatched?: () => void; onError?: (err: unknown) => number | void; onSwept?: () => void }): TimedSweeper {
  const log = deps.app.log.child("timed");
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let wakeUp: (() => void) | null = null;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      wakeUp = resolve;
      timer = setTimeout(resolve, ms);
    });
  const loop = (async () => {
    while (!stopping) {
      let wait = deps.intervalMs ?? 1000;
      try {
        const r = await sweepPlannedRuns(deps);
        // Wait steps whose time or timeout came resume on the same tick (lib/waits/tick.ts).
        const resumed = await resumeDueWaits(deps.app);
        deps.onSwept?.();
        if (r.done > 0 || resumed > 0) deps.onDispatched?.();
        if (r.claimed > 0) log.info("timed runs swept", { ...r });
      } catch (err) {
        const backoff = deps.onError?.(err);
        if (typeof backoff === "number") wait = backoff;
        else log.warn("sweeping timed runs failed; trying again", { error: errorMessage(err) });
      }
      if (!stopping) await pause(wait);
    }
  })();
  return {
    wake: () => wakeUp?.(),
    async stop() {
      stopping = true;
      clearTimeout(timer);
      wakeUp?.();
      await loop;
    },
  };
}
