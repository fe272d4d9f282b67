import type { PathsStep } from "../../definition/types";
import { decide } from "../conditions";
import type { StepBase } from "../step";
import type { Step } from "../types";
import { inBranch, placed, type End, type Scope, type Walk } from "./types";

/**
 * Paths: each path's conditions in order; mode `first` runs the first that holds, `all` every one
 * that holds; `otherwise` when none does. A retry follows the paths an earlier attempt took.
 */
export async function pathsStep(w: Walk, step: PathsStep, scope: Scope): Promise<End | null> {
  const { runner } = w.deps;
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
      w.blank(base, scope, {
        decision: taken.length > 0 ? taken.join(", ") : "none",
        why,
        output: { mode: step.mode, taken, checked },
      }),
    );
  }
  w.noted(scope, step.id, entry);
  const taken = (entry.output as { taken: string[] }).taken;
  for (const name of taken) {
    const steps = name === "otherwise" && !step.paths.some((p) => p.name === "otherwise") ? (step.otherwise ?? []) : (step.paths.find((p) => p.name === name)?.steps ?? []);
    const end = await w.list(steps, inBranch(scope, `${step.id}:${name}`));
    if (end) return end;
  }
  return null;
}
