import { localIso } from "../core/local-iso";
import type { App } from "../app";
import type { ActionPlugin } from "../actions/types";
import { ActionError, errorMessage, isDatabaseError } from "../core/errors";
import { Lru } from "../core/lru";
import type { ClaimedApplet, ClaimedRun } from "../db/store";
import { checkDefinition, timezoneOf } from "../definition";
import { topLevelActions } from "../definition/types";
import type { Sandbox } from "../sandbox";
import { createRedactor } from "../secrets/redact";
import { mayNameSecrets } from "../template/secret-refs";
import { backoffMs } from "./backoff";
import { createStepRunner } from "./step";
import { DECIDING_KINDS, type Step } from "./types";
import { walkSteps, type TransformRunner, type WalkContext } from "./walk";
import { debouncedTrigger, holdsLaneWhileWaiting } from "../definition/controls";
import { isParked, withWaitLinks } from "../waits/context";

export type { TransformRunner };

export interface ExecutorDeps {
  app: Pick<App, "store" | "clock" | "log" | "config" | "http" | "secrets">;
  actions: ReadonlyMap<string, ActionPlugin>;
  sandbox?: Sandbox;
  transform?: TransformRunner;
}

export type Outcome = {
  /** `released`: handed back to the queue untouched because the database failed a read mid-run. */
  status: "succeeded" | "skipped" | "failed" | "dead" | "retry" | "lost" | "released" | "waiting";
  error?: string;
  /** With `claimNextAs`: the run claimed in the same transaction that finished this one. */
  next?: ClaimedRun | null;
};

/**
 * The run's outcome is known but the database refused to store it (a full disk). Its actions must
 * not run again for that: the caller keeps calling `store` (with back-off) until it is stored or
 * the claim turns out lost.
 */
export class UnsavedOutcome extends Error {
  override name = "UnsavedOutcome";
  constructor(
    readonly store: () => Promise<Outcome>,
    cause: unknown,
  ) {
    super(`executor: could not record the run's outcome: ${errorMessage(cause)}`, { cause });
  }
}

/**
 * Executes one claimed run: context → filter → transform → actions, recording every step.
 * Steps that succeeded in an earlier attempt of this run keep their output and are not run again
 * (DESIGN.md: a retry does not repeat what already succeeded). Every write is fenced by the claim.
 */
export async function executeRun(deps: ExecutorDeps, run: ClaimedRun, opts: { claimNextAs?: string } = {}): Promise<Outcome> {
  const { app } = deps;
  const { store, clock } = app;
  const log = app.log.child("executor");
  // Every secret value any template of this run resolved, and the forms filters made of them: all
  // that is stored (every field of every step, the run's error) and logged goes through it, so a
  // step that fails before it can report what it used (the transform's provider echoing the
  // prompt) and a field no one thought of (an action's progress) are redacted too.
  const redactor = createRedactor();
  // Steps recorded in this same attempt mean it was cut off (the worker stopped, or the database
  // failed) and resumes: the first step it runs now was in flight then, and may have run twice.
  // A run resumed from a wait step was parked, not cut off.
  const resumed = run.steps.some((s) => s.attempt === run.attempt) && !isParked(run.steps);
  const priorSteps = new Set(run.steps);
  const marked = (list: Step[]): Step[] => {
    if (!resumed) return list;
    // Entries that only decide (if, paths, a loop's summary, a skipped action) ran nothing that could run twice.
    const i = list.findIndex((s) => !priorSteps.has(s) && !DECIDING_KINDS.includes(s.kind) && s.decision !== "skip");
    return i < 0 ? list : list.map((s, j) => (j === i ? { ...s, rerun: true as const } : s));
  };

  // Every settle goes through here: a database that refuses it leaves the outcome to be stored
  // again by the caller, never the run to be executed again.
  const settle = async (save: () => Promise<Outcome>): Promise<Outcome> => {
    try {
      return await save();
    } catch (err) {
      if (!isDatabaseError(err)) throw err;
      throw new UnsavedOutcome(save, err);
    }
  };
  const finish = (status: "succeeded" | "skipped" | "failed" | "dead", rawError: string | null, keepStoredSteps = false): Promise<Outcome> =>
    settle(async () => {
      const error = rawError === null ? null : redactor.redact(rawError);
      const recorded = keepStoredSteps ? null : redactor.redact(marked(steps));
      if (opts.claimNextAs) {
        const r = await store.runs.finishAndClaim(run, status, recorded, error, clock.now(), opts.claimNextAs);
        return r.ok ? { status, error: error ?? undefined, next: r.next } : { status: "lost", next: r.next };
      }
      const ok = await store.runs.finish(run, status, recorded, error, clock.now());
      return ok ? { status, error: error ?? undefined } : { status: "lost" };
    });
  // Progress between steps. A database that refuses it does not stop the run (the outcome is
  // stored later, see `settle`); it only means a crash now would resume from an earlier step.
  const saveProgress = async (current: Step[]): Promise<boolean> => {
    try {
      return await store.runs.saveSteps(run, redactor.redact(marked(current)), clock.now());
    } catch (err) {
      if (!isDatabaseError(err)) throw err;
      log.warn("could not record a run's progress; carrying on", { run_id: run.id, error: errorMessage(err) });
      return true;
    }
  };
  const runner = createStepRunner({ attempt: run.attempt, earlier: run.steps, clock, redactor, save: saveProgress });
  const { steps } = runner;

  try {
    return await executeSteps();
  } catch (err) {
    if (err instanceof UnsavedOutcome) throw err;
    if (isDatabaseError(err)) {
      // A read failed mid-run: hand the run back to be claimed again. What it did so far is in the
      // steps of its last checkpoint (stored before each next step), which the release keeps.
      const message = `executor: the database failed: ${errorMessage(err)}`;
      return settle(async () => ((await store.runs.release(run, clock.now())) ? { status: "released", error: message } : { status: "lost" }));
    }
    // Anything else outside an action (a row that cannot be read, a bug) ends the run with the
    // reason instead of leaving it running for the stuck bound to requeue forever.
    log.error("run failed outside its actions", { run_id: run.id, error: redactor.redact(errorMessage(err)) });
    // Once an action was delivered the run is not simply failed: it gets the retry decision a
    // retryable failure gets (a retry resumes after the delivered steps, so nothing is sent twice;
    // `dead` when its attempts are spent).
    if (steps.some((s) => s.kind === "action" && s.status === "succeeded")) {
      return settleFailure(new ActionError(errorMessage(err), { retryable: true, cause: err }), "executor");
    }
    return finish("failed", `executor: ${errorMessage(err)}`, run.stepsError !== undefined);
  }

  async function executeSteps(): Promise<Outcome> {
    if (run.stepsError !== undefined) return finish("failed", `executor: ${run.stepsError}`, true);
    if (run.readError !== undefined) return finish("failed", `executor: ${run.readError}`);
    // The event and the applet came with the claim, the applet at the version the claim recorded
    // on the run (run.appletVersion): what the run page links to is what runs, whatever is saved
    // meanwhile.
    const { event, applet } = run;
    if (!applet || !event) return finish("failed", "executor: the applet or event of this run no longer exists");
    const { checked, namesSecrets } = checkedDefinition(applet);
    if (!checked.ok) {
      return finish("failed", `executor: the applet definition is invalid: ${checked.problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`);
    }
    // Version 1 reads as its step list (checkDefinition answers with version 2).
    const def = checked.definition;
    // A rate limit holds at the start too: the slot the run got at ingest may have passed while no
    // worker ran (every run held back would start at once). A fresh run only: a retry was paced by
    // its backoff, and a run that already did steps (resumed, or back from a wait) has started.
    const rate = def.controls?.rate_limit;
    if (rate && run.attempt === 1 && run.steps.length === 0) {
      const admitted = await store.runControls.admitStart(run, { max: rate.max, periodMs: rate.period_seconds * 1000, overflow: rate.overflow }, clock.now());
      if (admitted === "lost") return { status: "lost" };
      if (admitted === "held") return { status: "released" };
    }
    // The stored secrets are read only for a definition whose templates can name one: most do
    // not, and on PostgreSQL the read was one statement in five of a run.
    const secrets = namesSecrets ? await app.secrets.lookup() : noSecrets;
    const timezone = timezoneOf(def);
    if (run.actionIndex !== null && !topLevelActions(def)[run.actionIndex]) {
      return finish("failed", `executor: the applet no longer has action ${run.actionIndex + 1}, which this timed run was planned for`);
    }
    const now = clock.now();
    // A debounced run carries the events merged into it (lib/definition/controls.ts): one more read, only for such applets.
    const debounce = def.controls?.debounce;
    const trigger = debounce ? debouncedTrigger(debounce.keep, (await store.runControls.mergedEvents(run.id)).map((e) => e.payload)) : event.payload;
    const ctx: WalkContext = {
      trigger,
      ai: {},
      vars: {},
      steps: {},
      applet: { id: applet.id, name: applet.name },
      // The links of the run's next wait ({{run.resume_url}}, {{run.approve_url}}, {{run.deny_url}}).
      run: withWaitLinks({ id: run.id, attempt: run.attempt }, app.config, run.id, () => steps),
      event: { id: event.id, source: event.source, received_at: event.receivedAt },
      now: now.toISOString(),
      secrets: (name) => {
        const value = secrets(name);
        if (value) redactor.add([value]);
        return value;
      },
    };
    // Formatting in a zone costs more than the rest of a small run: only a template that names
    // now_local pays for it.
    Object.defineProperty(ctx, "now_local", { enumerable: true, get: () => localIso(now, timezone) });

    const waitOf = (seq: number) => store.waits.get(run.id, seq);
    const end = await walkSteps({ ...deps, app, run, applet: { id: applet.id, name: applet.name }, runner, redactor, log, timezone, waitOf }, def, ctx, run.actionIndex);
    if (end === null) return finish("succeeded", null);
    if (end.kind === "lost") return { status: "lost" };
    if (end.kind === "wait") {
      const wait = { ...end.wait, detail: redactor.redact(end.wait.detail), holdsLane: holdsLaneWhileWaiting(def.controls) };
      return settle(async () => {
        const parked = await store.waits.suspend(run, redactor.redact(marked(steps)), wait, clock.now());
        return parked === "lost" ? { status: "lost" } : { status: parked === "waiting" ? "waiting" : "released" };
      });
    }
    if (end.kind === "failure") return settleFailure(end.error, end.where);
    return finish(end.status, end.reason);
  }

  function settleFailure(err: unknown, where: string): Promise<Outcome> {
    const message = redactor.redact(`${where}: ${errorMessage(err)}`);
    const retryable = err instanceof ActionError ? err.retryable : false;
    if (!retryable) return finish("failed", message);
    if (run.attempt >= run.maxAttempts) return finish("dead", message);
    const at = new Date(clock.now().getTime() + backoffMs(run.attempt, err instanceof ActionError ? err.retryAfterMs : undefined));
    return settle(async () => ((await store.runs.retryLater(run, redactor.redact(marked(steps)), message, at, clock.now())) ? { status: "retry", error: message } : { status: "lost" }));
  }
}

/**
 * Definitions are validated on save; the executor checks again (a row may be older than the code)
 * but only once per applet version, not on every run.
 */
const checkedCache = new Lru<string, { checked: ReturnType<typeof checkDefinition>; namesSecrets: boolean }>(1000);
function checkedDefinition(applet: ClaimedApplet) {
  // Versions are numbered from 1; a row older than version history is told apart by its updated_at.
  const key = applet.version > 0 ? `${applet.id}@v${applet.version}` : `${applet.id}@${applet.updatedAt}`;
  let entry = checkedCache.get(key);
  if (!entry) {
    entry = { checked: checkDefinition(applet.definition), namesSecrets: mayNameSecrets(applet.definition) };
    checkedCache.set(key, entry);
  }
  return entry;
}

const noSecrets = (): undefined => undefined;
