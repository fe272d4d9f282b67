import { ActionError, errorMessage } from "../../core/errors";
import type { FilterStep } from "../../definition/types";
import type { StepBase } from "../step";
import { iterationWords, placed, type End, type Scope, type Walk } from "./types";

/**
 * Filter code: runs in the sandbox with the trigger, the steps so far, vars and AI values (and the
 * item inside a for_each); `skip()` ends the run as skipped (inside a for_each, skips the item),
 * `set()` adds vars for the steps after it.
 */
export async function filterStep(w: Walk, step: FilterStep, scope: Scope): Promise<End | null> {
  const { runner, sandbox } = w.deps;
  const base: StepBase = { id: step.id, kind: "filter", name: "filter", ...placed(scope) };
  const label = step.id === "filter" ? "filter" : `filter ${step.id}${iterationWords(scope)}`;
  if (!w.deps.sandbox && !runner.succeededBefore(base) && runner.earlier(base)?.status !== "skipped") {
    return { kind: "finish", status: "failed", reason: "executor: filter code present but no sandbox is configured" };
  }
  const { ctx } = scope;
  const r = await runner.run(base, async (handle) => {
    // Only reached without a sandbox when an earlier attempt's filter is reused (checked above).
    const result = await sandbox!.run({
      code: step.code,
      trigger: ctx.trigger,
      applet: w.deps.applet,
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
  w.noted(scope, step.id, r.step);
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
