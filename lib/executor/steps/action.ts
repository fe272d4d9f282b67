import type { ActionPlugin } from "../../actions/types";
import { actionCredentialSpots } from "../../applets/credentials";
import { ActionError } from "../../core/errors";
import type { ClaimedRun } from "../../db/store";
import type { ActionStep } from "../../definition/types";
import { fieldsOf, type FieldMeta } from "../../plugin";
import { redactingLogger } from "../../secrets/redact";
import { missingSecretsCause } from "../../template/secret-refs";
import { renderConfig } from "../../template";
import { decide } from "../conditions";
import type { StepBase } from "../step";
import { iterationWords, placed, type End, type Scope, type Walk } from "./types";

/**
 * An action (any action plug-in): its `when` decides whether it runs, its config is rendered and
 * checked, and its failure ends the run (retried when the error says so) unless it continues on error.
 * A top-level timed action runs only in its own timed run.
 */
export async function actionStep(w: Walk, step: ActionStep, scope: Scope): Promise<End | null> {
  const { runner, redactor, timezone, run, app } = w.deps;
  const { clock } = app;
  const top = scope.iteration.length === 0 && scope.place === "" ? w.topIndex(step) : undefined;
  if (top !== undefined && (w.actionIndex !== null ? top !== w.actionIndex : step.timing !== undefined && !w.deps.dryRun)) return null;
  const { ctx } = scope;
  const base: StepBase = { id: step.id, kind: "action", name: step.type, ...(top !== undefined ? { index: top } : {}), ...placed(scope) };
  if (w.deps.dryRun && step.timing) {
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
      const entry = runner.record(w.blank(base, scope, { status: "skipped", decision: "skip", why: `${d.why} → skipped` }));
      w.noted(scope, step.id, entry);
      return null;
    }
    base.decision = "run";
    base.why = `${d.why} → run`;
  }
  const plugin = w.deps.actions.get(step.type);
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
      log: redactingLogger(w.deps.log.child(step.type), redactor),
      config: app.config,
      run: { runId: run.id, appletId: run.appletId, eventId: run.eventId, attempt: run.attempt, actionIndex: top ?? w.writtenPosition(step) },
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
  w.noted(scope, step.id, r.step);
  if (r.state !== "failed") return null;
  if (step.continue_on_error) {
    // Recorded, final (a retry keeps it), and the run goes on.
    r.step.continued = true;
    return null;
  }
  if (!plugin) return { kind: "finish", status: "failed", reason: `${where}: unknown action type` };
  w.deps.log.info("action failed", { run_id: run.id, action: step.type, step: step.id, error: r.step.error });
  // A secret that does not exist renders empty and the action then fails on the empty value:
  // the error names the secret, the real cause, not only its effect.
  const cause = missingSecretsCause(r.step.warnings);
  return { kind: "failure", error: r.error, where: cause ? `${where}: ${cause}` : where };
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

const pluginFieldCache = new WeakMap<ActionPlugin, FieldMeta[]>();
/** An action plug-in's fields (with their `credential` marks), read from its schema once. */
function credentialFieldsOf(plugin: ActionPlugin): FieldMeta[] {
  let fields = pluginFieldCache.get(plugin);
  if (!fields) pluginFieldCache.set(plugin, (fields = fieldsOf(plugin.configSchema)));
  return fields;
}
