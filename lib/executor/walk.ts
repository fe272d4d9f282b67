import type { ActionPlugin } from "../actions/types";
import { actionCredentialSpots } from "../applets/credentials";
import type { Clock } from "../core/clock";
import { ActionError, errorMessage } from "../core/errors";
import type { Logger } from "../core/log";
import type { AppConfig } from "../core/config";
import type { ClaimedRun } from "../db/store";
import {
  LIMITS,
  childLists,
  isActionStep,
  topLevelActions,
  type ActionStep,
  type AiStep,
  type Definition,
  type FilterStep,
  type ForEachStep,
  type IfStep,
  type PathsStep,
  type Step as DefStep,
  type StopStep,
  type WaitStep,
} from "../definition/types";
import type { StoredWait, WaitInsert } from "../db/store/types";
import { fieldsOf, type FieldMeta } from "../plugin";
import type { Sandbox } from "../sandbox";
import type { SafeFetch } from "../net/types";
import { redactingLogger, type Redactor } from "../secrets/redact";
import { missingSecretsCause } from "../template/secret-refs";
import { renderConfig, renderTemplate, resolveValue, type TemplateContext } from "../template";
import { decide, show } from "./conditions";
import type { StepBase, StepRunner } from "./step";
import type { Step } from "./types";
import { planWait, resolvedWhy, waitOutput } from "./wait";
import { waitLinks } from "../waits/links";
import { sentLinks } from "../waits/sent";

/** Runs an AI step (lib/transform.ts); returns the value to put under `ai.<output>`. */
export type TransformRunner = (
  transform: Pick<AiStep, "model" | "prompt" | "output" | "json">,
  ctx: TemplateContext,
  timezone: string,
) => Promise<{ value: unknown; input: unknown; warnings: string[]; secretsUsed: string[]; skipped?: boolean }>;

/** How a walk ended before the end of the step list; `null` from a list means "carry on". */
export type End =
  /** The run ends with this status and reason (a stop step, a filter's skip, a failure that is final). */
  | {
      kind: "finish";
      status: "succeeded" | "skipped" | "failed";
      reason: string | null;
      /** A filter's `skip()`: inside a for_each it skips the item, elsewhere it ends the run. */
      skipItem?: true;
      /** A limit of the run: no continue_on_error catches it. */
      limit?: true;
    }
  /** A step failed: retried when the error says so (the run's retry policy), final otherwise. */
  | { kind: "failure"; error: unknown; where: string }
  /** Storing a checkpoint found the claim taken over. */
  | { kind: "lost" }
  /** A wait step: the run is to be parked (lib/executor/wait.ts) until what it waits for resumes it. */
  | { kind: "wait"; wait: WaitInsert };

export interface WalkDeps {
  app: { clock: Clock; config: AppConfig; http: SafeFetch };
  actions: ReadonlyMap<string, ActionPlugin>;
  sandbox?: Sandbox;
  transform?: TransformRunner;
  run: Pick<ClaimedRun, "id" | "attempt" | "appletId" | "eventId" | "replay" | "plannedRunId">;
  applet: { id: string; name: string };
  /**
   * A dry run (lib/executor/dry-run.ts): `actions` and `app.http` record instead of sending, and
   * steps that would make the run wait (a timed action, a wait) are shown and passed at once.
   */
  dryRun?: true;
  runner: StepRunner;
  redactor: Redactor;
  log: Logger;
  timezone: string;
  /** The stored state of the run's n-th wait (resolved or not); absent: waits are never resolved here. */
  waitOf?: (seq: number) => Promise<StoredWait | null>;
}

/** Where a step runs: the loop iterations around it, the branches taken to reach it, the context its templates see. */
interface Scope {
  iteration: number[];
  place: string;
  ctx: WalkContext;
}

/** The template context plus the step outputs (`steps.<id>`), vars and AI values every step adds to. */
export interface WalkContext extends TemplateContext {
  steps: Record<string, { status: Step["status"]; output: unknown; error?: string | null }>;
  vars: Record<string, unknown>;
  ai: Record<string, unknown>;
}

/**
 * Executes a definition's step list against `ctx`, recording each step in the run's journal
 * (`deps.runner`): actions (with `when` and `continue_on_error`), filter code, AI steps, if,
 * paths, for_each and stop, nested. What an earlier attempt completed (per step and iteration) is
 * reused, never run again. A timed run (`actionIndex`: the n-th top-level action) runs the filter
 * and AI steps before that action, then only that action; the event's own run leaves the timed
 * actions out. Resolves with how the run ends, or null when the list ran to its end.
 */
const CHOOSERS: ReadonlySet<string> = new Set(["if", "paths", "for_each"]);

export async function walkSteps(deps: WalkDeps, def: Definition, ctx: WalkContext, actionIndex: number | null): Promise<End | null> {
  const { runner, redactor, run, timezone, app } = deps;
  const { clock } = app;
  const topIndex = new Map(topLevelActions(def).map((a, i) => [a, i] as const));
  const writtenIndex = new Map<DefStep, number>();
  let executed = 0;

  const limitReached = (step: DefStep, scope: Scope): End => ({
    kind: "finish",
    status: "failed",
    reason: `the run reached the limit of ${LIMITS.executedSteps.toLocaleString("en-US")} executed steps (every action, filter, AI, wait and stop of every iteration counts); it stopped before step ${step.id}${iterationWords(scope)}`,
    limit: true,
  });

  const blank = (base: StepBase, scope: Scope, over: Partial<Step>): Step => ({
    ...base,
    ...placed(scope),
    status: "succeeded",
    attempt: run.attempt,
    warnings: [],
    logs: [],
    started_at: clock.now().toISOString(),
    duration_ms: 0,
    error: null,
    ...over,
  });

  const noted = (scope: Scope, id: string, step: Step) => {
    scope.ctx.steps[id] = { status: step.status, output: step.output ?? null, ...(step.error ? { error: step.error } : {}) };
  };

  async function list(steps: DefStep[], scope: Scope): Promise<End | null> {
    for (const step of steps) {
      // if, paths and for_each only choose what runs: counting them would make a for_each of the
      // largest allowed size (1,000 items of one step) end at its last item.
      if (!CHOOSERS.has(step.type) && ++executed > LIMITS.executedSteps) return limitReached(step, scope);
      const end = await one(step, scope);
      if (end) return end;
    }
    return null;
  }

  function one(step: DefStep, scope: Scope): Promise<End | null> {
    switch (step.type) {
      case "filter":
        return filter(step as FilterStep, scope);
      case "ai":
        return ai(step as AiStep, scope);
      case "if":
        return ifStep(step as IfStep, scope);
      case "paths":
        return paths(step as PathsStep, scope);
      case "for_each":
        return forEach(step as ForEachStep, scope);
      case "stop":
        return Promise.resolve(stop(step as StopStep, scope));
      case "wait":
        return wait(step as WaitStep, scope);
      default:
        return action(step as ActionStep, scope);
    }
  }

  // ---- filter code -------------------------------------------------------------------------
  async function filter(step: FilterStep, scope: Scope): Promise<End | null> {
    const base: StepBase = { id: step.id, kind: "filter", name: "filter", ...placed(scope) };
    const label = step.id === "filter" ? "filter" : `filter ${step.id}${iterationWords(scope)}`;
    if (!deps.sandbox && !runner.succeededBefore(base) && runner.earlier(base)?.status !== "skipped") {
      return { kind: "finish", status: "failed", reason: "executor: filter code present but no sandbox is configured" };
    }
    const { sandbox } = deps;
    const { ctx } = scope;
    const r = await runner.run(base, async (handle) => {
      // Only reached without a sandbox when an earlier attempt's filter is reused (checked above).
      const result = await sandbox!.run({
        code: step.code,
        trigger: ctx.trigger,
        applet: deps.applet,
        context: { steps: ctx.steps, vars: ctx.vars, ai: ctx.ai, ...("item" in ctx ? { item: ctx.item, index: ctx.index } : {}) },
      });
      handle.setInput({ code: step.code });
      return {
        status: result.error ? "failed" : result.skipped ? "skipped" : "succeeded",
        output: { vars: result.vars, skipped: result.skipped, reason: result.reason ?? null },
        error: result.error ?? null,
        logs: result.logs,
        durationMs: result.duration_ms,
        value: result,
      };
    });
    if (r.state === "lost") return { kind: "lost" };
    // The sandbox itself could not run the code (closing, a payload that is not JSON): not the filter's fault, retry.
    if (r.state === "failed") return { kind: "failure", error: new ActionError(`sandbox unavailable: ${errorMessage(r.error)}`, { retryable: true }), where: label };
    noted(scope, step.id, r.step);
    const out = (r.state === "reused" ? r.step.output : r.value) as { vars?: Record<string, unknown>; skipped?: boolean; reason?: string | null; error?: string } | undefined;
    // The sandbox names itself in some messages ("filter: timed out …"): said once, not twice.
    if (r.state === "done" && r.value.error) {
      const message = r.value.error.startsWith("filter: ") ? r.value.error.slice("filter: ".length) : r.value.error;
      return { kind: "finish", status: "failed", reason: `${label}: ${message}` };
    }
    if (r.step.status === "skipped") return { kind: "finish", status: "skipped", reason: out?.reason ? `skipped: ${out.reason}` : "skipped by filter", skipItem: true };
    // Filter code starts with the vars set so far: what it hands back is the whole set.
    Object.assign(ctx.vars, out?.vars ?? {});
    return null;
  }

  // ---- AI ------------------------------------------------------------------------------------
  async function ai(step: AiStep, scope: Scope): Promise<End | null> {
    const base: StepBase = { id: step.id, kind: "transform", name: step.model, ...placed(scope) };
    const { transform } = deps;
    // Without an AI runner (a worker started without one) the step is left out, as version 1 did.
    if (!transform && !runner.succeededBefore(base)) return null;
    const { ctx } = scope;
    const r = await runner.run(base, async (handle) => {
      const t = await transform!(step, ctx, timezone);
      redactor.add(t.secretsUsed);
      handle.setInput(t.input);
      handle.record.warnings.push(...t.warnings);
      return { status: t.skipped ? "skipped" : "succeeded", output: { value: t.value }, value: t.value };
    });
    if (r.state === "lost") return { kind: "lost" };
    if (r.state === "failed") {
      noted(scope, step.id, r.step);
      return { kind: "failure", error: r.error, where: step.id === "ai" ? "transform" : `AI step ${step.id}${iterationWords(scope)}` };
    }
    const value = r.state === "reused" ? (r.step.output as { value?: unknown } | undefined)?.value : r.value;
    ctx.ai[step.output] = value;
    noted(scope, step.id, r.step);
    return null;
  }

  // ---- action --------------------------------------------------------------------------------
  async function action(step: ActionStep, scope: Scope): Promise<End | null> {
    const top = scope.iteration.length === 0 && scope.place === "" ? topIndex.get(step) : undefined;
    if (top !== undefined && (actionIndex !== null ? top !== actionIndex : step.timing !== undefined && !deps.dryRun)) return null;
    const { ctx } = scope;
    const base: StepBase = { id: step.id, kind: "action", name: step.type, ...(top !== undefined ? { index: top } : {}), ...placed(scope) };
    if (deps.dryRun && step.timing) {
      base.decision = "timed";
      base.why = "a timed action: planned for its due time when the applet really runs; shown now, not planned";
    }
    const v1Style = top !== undefined && step.id === `action_${top + 1}`;
    const where = v1Style ? `action ${top + 1} (${step.type})` : `step ${step.id}${iterationWords(scope)} (${step.type})`;
    const earlier = runner.earlier(base);
    const settled = earlier && (earlier.status === "succeeded" || earlier.status === "skipped" || (earlier.status === "failed" && earlier.continued));
    if (step.when && !settled) {
      const d = decide(step.when, ctx);
      if (!d.holds) {
        const entry = runner.record(blank(base, scope, { status: "skipped", decision: "skip", why: `${d.why} → skipped` }));
        noted(scope, step.id, entry);
        return null;
      }
      base.decision = "run";
      base.why = `${d.why} → run`;
    }
    const plugin = deps.actions.get(step.type);
    const r = await runner.run(base, async (handle) => {
      if (!plugin) throw new ActionError(`executor: unknown action type "${step.type}"`);
      const rendered = renderConfig(step.config, ctx, { timezone, typedKeys: plugin.typedConfig });
      redactor.add(rendered.secretsUsed);
      // A credential field's value is a secret of the run even when written literally in the
      // applet (a pasted Slack URL, "Authorization: Bearer …"): never in the run log.
      redactor.add(actionCredentialSpots({ type: step.type, config: rendered.rendered }, () => credentialFieldsOf(plugin)).map((s) => s.value));
      handle.record.warnings.push(...rendered.warnings);
      handle.setInput(rendered.rendered);
      const parsed = plugin.configSchema.safeParse(rendered.rendered);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ");
        throw new ActionError(`the rendered config is invalid: ${problems}`);
      }
      const result = await plugin.run(parsed.data, {
        http: app.http,
        clock,
        log: redactingLogger(deps.log.child(step.type), redactor),
        config: app.config,
        run: { runId: run.id, appletId: run.appletId, eventId: run.eventId, attempt: run.attempt, actionIndex: top ?? writtenPosition(step) },
        idempotencyKey: idempotencyKey(run, step.id, scope.iteration, v1Style ? top : undefined),
        warn: (m) => void handle.record.warnings.push(m),
        progress: handle.record.progress,
        saveProgress: handle.saveProgress,
        // A value the action knows is secret (a token from the environment, one it puts in a
        // URL path) joins the run's secrets: everything recorded from here on is redacted.
        secret: (value) => redactor.add([value]),
        redact: (value) => redactor.redact(value),
        // The links {{run.approve_url}} / {{run.deny_url}} render to here, for approval buttons.
        waitLinks: () => {
          const r = ctx.run as { approve_url?: unknown; deny_url?: unknown } | undefined;
          return typeof r?.approve_url === "string" && typeof r.deny_url === "string" ? { approve_url: r.approve_url, deny_url: r.deny_url } : null;
        },
      });
      return { output: result.output, value: undefined };
    });
    if (r.state === "lost") return { kind: "lost" };
    noted(scope, step.id, r.step);
    if (r.state !== "failed") return null;
    if (step.continue_on_error) {
      // Recorded, final (a retry keeps it), and the run goes on.
      r.step.continued = true;
      return null;
    }
    if (!plugin) return { kind: "finish", status: "failed", reason: `${where}: unknown action type` };
    deps.log.info("action failed", { run_id: run.id, action: step.type, step: step.id, error: r.step.error });
    // A secret that does not exist renders empty and the action then fails on the empty value:
    // the error names the secret, the real cause, not only its effect.
    const cause = missingSecretsCause(r.step.warnings);
    return { kind: "failure", error: r.error, where: cause ? `${where}: ${cause}` : where };
  }

  function writtenPosition(step: ActionStep): number {
    if (writtenIndex.size === 0) {
      let i = 0;
      const visit = (steps: DefStep[]) => {
        for (const s of steps) {
          if (isActionStep(s)) writtenIndex.set(s, i++);
          for (const child of childLists(s)) visit(child.steps);
        }
      };
      visit(def.steps);
    }
    return writtenIndex.get(step) ?? -1;
  }

  // ---- if / paths ----------------------------------------------------------------------------
  async function ifStep(step: IfStep, scope: Scope): Promise<End | null> {
    const base: StepBase = { id: step.id, kind: "if", name: "if", ...placed(scope) };
    const earlier = runner.earlier(base);
    let entry: Step;
    if (earlier?.status === "succeeded" && (earlier.decision === "then" || earlier.decision === "else")) {
      // An earlier attempt decided: a retry follows the same branch, whatever changed since.
      entry = runner.record(earlier);
    } else {
      const d = decide(step.conditions, scope.ctx);
      const branch = d.holds ? "then" : "else";
      const taken = branch === "then" || step.else?.length ? branch : "nothing";
      entry = runner.record(blank(base, scope, { decision: branch, why: `${d.why} → ${taken}`, output: { branch } }));
    }
    noted(scope, step.id, entry);
    const branch = entry.decision === "then" ? step.then : (step.else ?? []);
    return list(branch, inBranch(scope, `${step.id}:${entry.decision}`));
  }

  async function paths(step: PathsStep, scope: Scope): Promise<End | null> {
    const base: StepBase = { id: step.id, kind: "paths", name: "paths", ...placed(scope) };
    const earlier = runner.earlier(base);
    const earlierTaken = (earlier?.output as { taken?: unknown } | undefined)?.taken;
    let entry: Step;
    if (earlier?.status === "succeeded" && Array.isArray(earlierTaken)) {
      entry = runner.record(earlier);
    } else {
      const checked: { name: string; holds: boolean; why: string }[] = [];
      for (const p of step.paths) {
        const d = decide(p.conditions, scope.ctx);
        checked.push({ name: p.name, holds: d.holds, why: d.why });
        if (d.holds && step.mode === "first") break;
      }
      const holding = checked.filter((c) => c.holds);
      const taken = holding.length > 0 ? holding.map((c) => c.name) : step.otherwise ? ["otherwise"] : [];
      const why =
        holding.length > 0
          ? holding.map((c) => `${c.why} → path '${c.name}'`).join("; ")
          : `${checked.map((c) => `'${c.name}': ${c.why}`).join("; ")} → ${step.otherwise ? "otherwise" : "no path"}`;
      entry = runner.record(
        blank(base, scope, {
          decision: taken.length > 0 ? taken.join(", ") : "none",
          why,
          output: { mode: step.mode, taken, checked },
        }),
      );
    }
    noted(scope, step.id, entry);
    const taken = (entry.output as { taken: string[] }).taken;
    for (const name of taken) {
      const steps = name === "otherwise" && !step.paths.some((p) => p.name === "otherwise") ? (step.otherwise ?? []) : (step.paths.find((p) => p.name === name)?.steps ?? []);
      const end = await list(steps, inBranch(scope, `${step.id}:${name}`));
      if (end) return end;
    }
    return null;
  }

  // ---- for_each ------------------------------------------------------------------------------
  async function forEach(step: ForEachStep, scope: Scope): Promise<End | null> {
    const base: StepBase = { id: step.id, kind: "for_each", name: "for_each", ...placed(scope) };
    const where = `for_each ${step.id}${iterationWords(scope)}`;
    const started = clock.now();
    const resolved = resolveValue(step.items, scope.ctx, { timezone });
    let problem: string | null = null;
    if (resolved === null) problem = `items must name a list with one {{…}} expression, such as {{trigger.body.items}}; got ${show(step.items)}`;
    else {
      redactor.add(resolved.secretsUsed);
      if (!Array.isArray(resolved.value)) problem = `expected a list at ${resolved.expression}, got ${typeWords(resolved.value)}`;
    }
    if (problem !== null) {
      const entry = runner.record(blank(base, scope, { status: "failed", error: problem, input: { items: step.items } }));
      noted(scope, step.id, entry);
      return { kind: "finish", status: "failed", reason: `${where}: ${problem}` };
    }
    const items = resolved!.value as unknown[];
    const cap = Math.min(step.max_items ?? LIMITS.forEachDefault, LIMITS.forEachMax);
    const running = items.slice(0, cap);
    const notRun = items.length - running.length;
    const counts = { items: items.length, succeeded: 0, failed: 0, skipped: 0, not_run: notRun };
    const entry = runner.record(
      blank(base, scope, {
        status: "running",
        input: { items: step.items, count: items.length, max_items: cap },
        why: notRun > 0 ? `${plural(items.length, "item")} at ${resolved!.expression}; the first ${cap} run (max_items ${cap}), ${notRun.toLocaleString("en-US")} not run` : `${plural(items.length, "item")} at ${resolved!.expression}`,
        output: counts,
      }),
    );
    const finishEntry = (status: Step["status"], error: string | null = null) => {
      entry.status = status;
      entry.error = error;
      entry.duration_ms = clock.now().getTime() - started.getTime();
      entry.output = { ...counts };
      runner.touch();
      noted(scope, step.id, entry);
    };
    for (const [index, item] of running.entries()) {
      const itemScope: Scope = { iteration: [...scope.iteration, index], place: joinPlace(scope.place, step.id), ctx: withItem(scope.ctx, item, index) };
      const before = runner.steps.length;
      const end = await list(step.steps, itemScope);
      if (end === null) {
        counts.succeeded++;
        continue;
      }
      if (end.kind === "finish" && end.skipItem) {
        counts.skipped++;
        continue;
      }
      const failed = end.kind === "failure" || (end.kind === "finish" && end.status === "failed" && !end.limit);
      if (failed && step.continue_on_error) {
        counts.failed++;
        // The item's failure is final: a retry keeps its entries rather than sending again.
        for (const s of runner.steps.slice(before)) if (s.status === "failed") s.continued = true;
        continue;
      }
      if (failed || end.kind === "finish") {
        if (failed) counts.failed++;
        finishEntry(failed ? "failed" : "succeeded", failed ? `item ${index} failed` : null);
      }
      return end;
    }
    finishEntry("succeeded");
    return null;
  }

  // ---- stop ----------------------------------------------------------------------------------
  function stop(step: StopStep, scope: Scope): End {
    const base: StepBase = { id: step.id, kind: "stop", name: "stop", ...placed(scope) };
    const rendered = step.reason ? renderTemplate(step.reason, scope.ctx, { timezone }) : null;
    if (rendered) redactor.add(rendered.secretsUsed);
    const reason = rendered?.value.trim() || null;
    const entry = runner.record(
      blank(base, scope, { status: step.status, decision: "stop", why: reason ?? `stopped, ${step.status}`, output: { status: step.status, reason }, warnings: rendered?.warnings ?? [] }),
    );
    noted(scope, step.id, entry);
    return { kind: "finish", status: step.status, reason: reason ? `stopped at ${step.id}: ${reason}` : `stopped at ${step.id}` };
  }

  // ---- wait ----------------------------------------------------------------------------------
  async function wait(step: WaitStep, scope: Scope): Promise<End | null> {
    const base: StepBase = { id: step.id, kind: "wait", name: step.kind, ...placed(scope) };
    // The run's n-th wait: its links ({{run.resume_url}} …) name it.
    const seq = runner.steps.filter((s) => s.kind === "wait").length;
    const where = `wait ${step.id}${iterationWords(scope)}`;
    const earlier = runner.earlier(base);
    let entry: Step;
    if (earlier?.status === "succeeded" && earlier.decision && earlier.decision !== "waiting") {
      // Resolved in an earlier attempt: a retry follows what it decided.
      entry = runner.record(earlier);
    } else {
      const stored = deps.waitOf ? await deps.waitOf(seq) : null;
      if (stored?.resolution) {
        const started = earlier?.started_at ?? clock.now().toISOString();
        entry = runner.record(
          blank(base, scope, {
            input: earlier?.input,
            decision: stored.resolution,
            why: resolvedWhy(stored),
            output: waitOutput(stored),
            started_at: started,
            duration_ms: Math.max(0, clock.now().getTime() - Date.parse(started)),
          }),
        );
      } else {
        const ctx = scope.ctx;
        const render = (t: string | undefined) => {
          if (t === undefined) return null;
          const r = renderTemplate(t, ctx, { timezone });
          redactor.add(r.secretsUsed);
          return r.value;
        };
        // Where the steps before it sent this wait's links: the run log says "sent to … at …".
        const sent = sentLinks(runner.steps, waitLinks(app.config.publicUrl, app.config.sessionSecret, run.id, seq).resume_url);
        const plan = planWait(step, { now: clock.now(), seq, renderedAt: step.kind === "until" ? render(step.at) : null, message: step.kind === "for_approval" ? render(step.message) : null, timezone, sent });
        if (plan.kind === "problem") {
          noted(scope, step.id, runner.record(blank(base, scope, { status: "failed", error: plan.problem, input: plan.input })));
          return { kind: "finish", status: "failed", reason: `${where}: ${plan.problem}` };
        }
        if (plan.kind === "past") {
          entry = runner.record(blank(base, scope, { decision: plan.skipRest ? "skip_rest" : "past", why: plan.why, input: plan.input, output: { resolution: "past" } }));
          noted(scope, step.id, entry);
          return plan.skipRest ? { kind: "finish", status: "skipped", reason: `${where}: ${plan.why}` } : null;
        }
        if (!deps.dryRun) {
          runner.record(blank(base, scope, { status: "running", decision: "waiting", why: plan.why, input: plan.input, output: { seq, ...plan.wait.detail }, ...(earlier?.started_at ? { started_at: earlier.started_at } : {}) }));
          return { kind: "wait", wait: plan.wait };
        }
        // A dry run shows the wait and goes on as if it ended well (time came, call arrived, approved).
        entry = runner.record(blank(base, scope, { decision: "dry_run", why: `${plan.why} — a dry run does not wait: the steps after it run now`, input: plan.input, output: { seq, ...plan.wait.detail } }));
      }
    }
    noted(scope, step.id, entry);
    if (entry.decision === "timeout") {
      if (!step.on_timeout) return { kind: "finish", status: "failed", reason: `${where} timed out (${step.timeout}) ${entry.why ? `— ${entry.why}` : ""}`.trim() };
      const end = await list(step.on_timeout, inBranch(scope, `${step.id}:on_timeout`));
      return end ?? { kind: "finish", status: "succeeded", reason: `${where} timed out; its on_timeout steps ran` };
    }
    if (entry.decision === "denied") {
      const onDeny = step.kind === "for_approval" ? step.on_deny : undefined;
      if (!onDeny) return { kind: "finish", status: "skipped", reason: `${where}: ${entry.why ?? "denied"}` };
      const end = await list(onDeny, inBranch(scope, `${step.id}:on_deny`));
      return end ?? { kind: "finish", status: "succeeded", reason: `${where}: ${entry.why ?? "denied"}; its on_deny steps ran` };
    }
    if (entry.decision === "cancelled") return { kind: "finish", status: "skipped", reason: `${where}: the wait was cancelled` };
    return null;
  }

  // ---- the walk ------------------------------------------------------------------------------
  const top: Scope = { iteration: [], place: "", ctx };
  if (actionIndex === null) return list(def.steps, top);
  // A timed run: the filter and AI steps before its action, then that action alone.
  const target = topLevelActions(def)[actionIndex]!;
  for (const step of def.steps) {
    if (step === target) return action(target, top);
    if (step.type === "filter" || step.type === "ai") {
      const end = await one(step, top);
      if (end) return end;
    }
  }
  return null;
}

/**
 * The outbound idempotency key (the http action's Idempotency-Key, the email Message-ID): the
 * same for every attempt of one run, so a receiver that dedupes sees retries and crash re-runs as
 * one request. Top-level actions of version 1's shape keep `<event>:<index>` (receivers' keys do
 * not change); every other step `<event>:<id>` with its iteration (`<event>:send[2]`). A replay
 * exists to send again, so its keys carry its own run id; a timed run's key is its planned run's
 * deterministic id.
 */
export function idempotencyKey(run: Pick<ClaimedRun, "id" | "eventId" | "replay" | "plannedRunId">, id: string, iteration: number[], v1Index?: number): string {
  if (run.plannedRunId !== null) return run.plannedRunId === run.id ? run.id : `${run.plannedRunId}:${run.id}`;
  const step = v1Index !== undefined ? String(v1Index) : `${id}${iteration.length ? `[${iteration.join(".")}]` : ""}`;
  return run.replay ? `${run.eventId}:${step}:${run.id}` : `${run.eventId}:${step}`;
}

function placed(scope: Scope): Pick<Step, "iteration" | "place"> {
  return { ...(scope.iteration.length ? { iteration: scope.iteration } : {}), ...(scope.place ? { place: scope.place } : {}) };
}

const joinPlace = (place: string, part: string): string => (place ? `${place}/${part}` : part);
const inBranch = (scope: Scope, part: string): Scope => ({ ...scope, place: joinPlace(scope.place, part) });
const iterationWords = (scope: Scope): string => (scope.iteration.length ? ` [item ${scope.iteration.join(".")}]` : "");

/** The item's context: the same context (its lazy `now_local` too) with `item` and `index`; steps, vars and ai stay shared. */
function withItem(ctx: WalkContext, item: unknown, index: number): WalkContext {
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(ctx)) as WalkContext;
  copy.item = item;
  copy.index = index;
  return copy;
}

function typeWords(value: unknown): string {
  if (value === undefined) return "nothing (no value there)";
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `text (${show(value)})`;
  if (typeof value === "number") return `a number (${value})`;
  if (typeof value === "boolean") return `a boolean (${value})`;
  return typeof value;
}

const plural = (n: number, word: string): string => `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;

const pluginFieldCache = new WeakMap<ActionPlugin, FieldMeta[]>();
/** An action plug-in's fields (with their `credential` marks), read from its schema once. */
function credentialFieldsOf(plugin: ActionPlugin): FieldMeta[] {
  let fields = pluginFieldCache.get(plugin);
  if (!fields) pluginFieldCache.set(plugin, (fields = fieldsOf(plugin.configSchema)));
  return fields;
}
