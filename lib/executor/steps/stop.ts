import type { StopStep } from "../../definition/types";
import { renderTemplate } from "../../template";
import type { StepBase } from "../step";
import { placed, type End, type Scope, type Walk } from "./types";

/** Stop: ends the run as succeeded or skipped, with its reason rendered. */
export async function stopStep(w: Walk, step: StopStep, scope: Scope): Promise<End> {
  const { runner, redactor, timezone } = w.deps;
  const base: StepBase = { id: step.id, kind: "stop", name: "stop", ...placed(scope) };
  const rendered = step.reason ? renderTemplate(step.reason, scope.ctx, { timezone }) : null;
  if (rendered) redactor.add(rendered.secretsUsed);
  const reason = rendered?.value.trim() || null;
  const entry = runner.record(
    w.blank(base, scope, { status: step.status, decision: "stop", why: reason ?? `stopped, ${step.status}`, output: { status: step.status, reason }, warnings: rendered?.warnings ?? [] }),
  );
  w.noted(scope, step.id, entry);
  return { kind: "finish", status: step.status, reason: reason ? `stopped at ${step.id}: ${reason}` : `stopped at ${step.id}` };
}
