import type { AiStep } from "../../definition/types";
import type { StepBase } from "../step";
import { iterationWords, placed, type End, type Scope, type Walk } from "./types";

/** An AI step: its value goes under `ai.<output>` for the steps after it. */
export async function aiStep(w: Walk, step: AiStep, scope: Scope): Promise<End | null> {
  const { runner, redactor, timezone, transform } = w.deps;
  const base: StepBase = { id: step.id, kind: "transform", name: step.model, ...placed(scope) };
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
    w.noted(scope, step.id, r.step);
    return { kind: "failure", error: r.error, where: step.id === "ai" ? "transform" : `AI step ${step.id}${iterationWords(scope)}` };
  }
  const value = r.state === "reused" ? (r.step.output as { value?: unknown } | undefined)?.value : r.value;
  ctx.ai[step.output] = value;
  w.noted(scope, step.id, r.step);
  return null;
}
