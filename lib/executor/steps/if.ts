import type { IfStep } from "../../definition/types";
import { decide } from "../conditions";
import type { StepBase } from "../step";
import type { Step } from "../types";
import { inBranch, placed, type End, type Scope, type Walk } from "./types";

/** Only if: its conditions choose `then` or `else`; a retry follows the branch an earlier attempt took. */
export async function ifStep(w: Walk, step: IfStep, scope: Scope): Promise<End | null> {
  const { runner } = w.deps;
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
    entry = runner.record(w.blank(base, scope, { decision: branch, why: `${d.why} → ${taken}`, output: { branch } }));
  }
  w.noted(scope, step.id, entry);
  const branch = entry.decision === "then" ? step.then : (step.else ?? []);
  return w.list(branch, inBranch(scope, `${step.id}:${entry.decision}`));
}
