import { localIso } from "../core/local-iso";
import type { App } from "../app";
import type { ActionPlugin } from "../actions/types";
import { actionCredentialSpots } from "../applets/credentials";
import { fieldsOf, type FieldMeta } from "../plugin";
import { ActionError, errorMessage, isDatabaseError } from "../core/errors";
import type { ClaimedApplet, ClaimedRun } from "../db/store";
import { checkDefinition, timezoneOf, type Definition } from "../definition";
import type { Sandbox } from "../sandbox";
import { createRedactor, redactingLogger } from "../secrets/redact";
import { mayNameSecrets, missingSecretsCause } from "../template/secret-refs";
import { renderConfig, type TemplateContext } from "../template";
import { backoffMs } from "./backoff";
import { createStepRunner } from "./step";
import type { Step } from "./types";

/** Runs the optional AI transform (lib/transform.ts); returns the value to put under `ai.<output>`. */
export type TransformRunner = (
  transform: NonNullable<Definition["transform"]>,
  ctx: TemplateContext,
  timezone: string,
) => Promise<{ value: unknown; input: unknown; warnings: string[]; secretsUsed: string[]; skipped?: boolean }>;

export interface ExecutorDeps {
  app: Pick<App, "store" | "clock" | "log" | "config" | "http" | "secrets">;
  actions: ReadonlyMap<string, ActionPlugin>;
  sandbox?: Sandbox;
  transform?: TransformRunner;
}

export type Outcome = {
  /** `released`: handed back to the queue untouched because the database failed a read mid-run. */
  status: "succeeded" | "skipped" | "failed" | "dead" | "retry" | "lost" | "released";
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
  const resumed = run.steps.some((s) => s.attempt === run.attempt);
  const priorSteps = new Set(run.steps);
  const marked = (list: Step[]): Step[] => {
    if (!resumed) return list;
    const i = list.findIndex((s) => !priorSteps.has(s));
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
    const def = checked.definition;
    // The stored secrets are read only for a definition whose templates can name one: most do
    // not, and on PostgreSQL the read was one statement in five of a run.
    const secrets = namesSecrets ? await app.secrets.lookup() : noSecrets;
    const timezone = timezoneOf(def);
    // Idempotency keys (the http action's Idempotency-Key, the email Message-ID): the same for every
    // attempt of one run, so a receiver that dedupes sees retries and crash re-runs as one request.
    // A replay exists to send again (after the applet was fixed), so its keys carry its own run id.
    // Whether the run is a replay came with the claim (ClaimedRun.replay).
    const idempotencyKey = (index: number): string => {
      // A timed run's key is its planned run's deterministic id (issue 17): the same for every
      // attempt and every sweep that dispatched it; a replay (a new row) adds its own id.
      if (run.plannedRunId !== null) return run.plannedRunId === run.id ? run.id : `${run.plannedRunId}:${run.id}`;
      return run.replay ? `${run.eventId}:${index}:${run.id}` : `${run.eventId}:${index}`;
    };
    const now = clock.now();
    const ctx: TemplateContext = {
      trigger: event.payload,
      ai: {},
      vars: {},
      applet: { id: applet.id, name: applet.name },
      run: { id: run.id, attempt: run.attempt },
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

    // Filter
    if (def.filter) {
      if (!deps.sandbox && !runner.succeededBefore({ kind: "filter" })) return finish("failed", "executor: filter code present but no sandbox is configured");
      const { sandbox } = deps;
      const code = def.filter.code;
      const r = await runner.run({ kind: "filter", name: "filter" }, async (step) => {
        // Only reached without a sandbox when an earlier attempt's filter is reused (checked above).
        const result = await sandbox!.run({ code, trigger: event.payload, applet: { id: applet.id, name: applet.name } });
        step.setInput({ code });
        return {
          status: result.error ? "failed" : result.skipped ? "skipped" : "succeeded",
          output: { vars: result.vars, skipped: result.skipped, reason: result.reason ?? null },
          error: result.error ?? null,
          logs: result.logs,
          durationMs: result.duration_ms,
          value: result,
        };
      });
      if (r.state === "lost") return { status: "lost" };
      // The sandbox itself could not run the code (closing, a payload that is not JSON): not the filter's fault, retry.
      if (r.state === "failed") return settleFailure(new ActionError(`sandbox unavailable: ${errorMessage(r.error)}`, { retryable: true }), "filter");
      if (r.state === "reused") ctx.vars = (r.step.output as { vars?: Record<string, unknown> } | undefined)?.vars ?? {};
      // The sandbox names itself in some messages ("filter: timed out …"): said once, not twice.
      else if (r.value.error) return finish("failed", r.value.error.startsWith("filter: ") ? r.value.error : `filter: ${r.value.error}`);
      else if (r.value.skipped) return finish("skipped", r.value.reason ? `skipped: ${r.value.reason}` : "skipped by filter");
      else ctx.vars = r.value.vars;
    }

    // AI transform
    const { transform } = deps;
    if (def.transform && (transform || runner.succeededBefore({ kind: "transform" }))) {
      const spec = def.transform;
      const r = await runner.run({ kind: "transform", name: spec.model }, async (step) => {
        // Only reached without a runner when an earlier attempt's transform is reused (checked above).
        const t = await transform!(spec, ctx, timezone);
        redactor.add(t.secretsUsed);
        step.setInput(t.input);
        step.record.warnings.push(...t.warnings);
        return { status: t.skipped ? "skipped" : "succeeded", output: { value: t.value }, value: t.value };
      });
      if (r.state === "lost") return { status: "lost" };
      if (r.state === "failed") return settleFailure(r.error, "transform");
      ctx.ai = { [spec.output]: r.state === "reused" ? (r.step.output as { value?: unknown } | undefined)?.value : r.value };
    }

    // Actions, in order. A timed run (issue 17) executes its one action; the event's own run the
    // actions without a timing.
    if (run.actionIndex !== null && !def.actions[run.actionIndex]) {
      return finish("failed", `executor: the applet no longer has action ${run.actionIndex + 1}, which this timed run was planned for`);
    }
    for (const [index, action] of def.actions.entries()) {
      if (run.actionIndex !== null ? index !== run.actionIndex : action.timing !== undefined) continue;
      const plugin = deps.actions.get(action.type);
      const where = `action ${index + 1} (${action.type})`;
      const r = await runner.run({ kind: "action", name: action.type, index }, async (step) => {
        if (!plugin) throw new ActionError(`executor: unknown action type "${action.type}"`);
        const rendered = renderConfig(action.config, ctx, { timezone, typedKeys: plugin.typedConfig });
        redactor.add(rendered.secretsUsed);
        // A credential field's value is a secret of the run even when written literally in the
        // applet (a pasted Slack URL, "Authorization: Bearer …"): never in the run log.
        redactor.add(actionCredentialSpots({ type: action.type, config: rendered.rendered }, () => credentialFieldsOf(plugin)).map((s) => s.value));
        step.record.warnings.push(...rendered.warnings);
        step.setInput(rendered.rendered);
        const parsed = plugin.configSchema.safeParse(rendered.rendered);
        if (!parsed.success) {
          const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ");
          throw new ActionError(`the rendered config is invalid: ${problems}`);
        }
        const result = await plugin.run(parsed.data, {
          http: app.http,
          clock,
          log: redactingLogger(log.child(action.type), redactor),
          config: app.config,
          run: { runId: run.id, appletId: run.appletId, eventId: run.eventId, attempt: run.attempt, actionIndex: index },
          idempotencyKey: idempotencyKey(index),
          warn: (m) => void step.record.warnings.push(m),
          progress: step.record.progress,
          saveProgress: step.saveProgress,
          // A value the action knows is secret (a token from the environment, one it puts in a
          // URL path) joins the run's secrets: everything recorded from here on is redacted.
          secret: (value) => redactor.add([value]),
          redact: (value) => redactor.redact(value),
        });
        return { output: result.output, value: undefined };
      });
      if (r.state === "lost") return { status: "lost" };
      if (r.state === "failed") {
        if (!plugin) return finish("failed", `${where}: unknown action type`);
        log.info("action failed", { run_id: run.id, action: action.type, error: r.step.error });
        // A secret that does not exist renders empty and the action then fails on the empty value:
        // the error names the secret, the real cause, not only its effect.
        const cause = missingSecretsCause(r.step.warnings);
        return settleFailure(r.error, cause ? `${where}: ${cause}` : where);
      }
    }
    return finish("succeeded", null);
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
const checkedCache = new Map<string, { checked: ReturnType<typeof checkDefinition>; namesSecrets: boolean }>();
function checkedDefinition(applet: ClaimedApplet) {
  // Versions are numbered from 1; a row older than version history is told apart by its updated_at.
  const key = applet.version > 0 ? `${applet.id}@v${applet.version}` : `${applet.id}@${applet.updatedAt}`;
  let entry = checkedCache.get(key);
  if (!entry) {
    entry = { checked: checkDefinition(applet.definition), namesSecrets: mayNameSecrets(applet.definition) };
    if (checkedCache.size >= 1000) checkedCache.clear();
    checkedCache.set(key, entry);
  }
  return entry;
}

const noSecrets = (): undefined => undefined;

const pluginFieldCache = new WeakMap<ActionPlugin, FieldMeta[]>();
/** An action plug-in's fields (with their `credential` marks), read from its schema once. */
function credentialFieldsOf(plugin: ActionPlugin): FieldMeta[] {
  let fields = pluginFieldCache.get(plugin);
  if (!fields) pluginFieldCache.set(plugin, (fields = fieldsOf(plugin.configSchema)));
  return fields;
}
