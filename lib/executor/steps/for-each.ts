import { LIMITS, type ForEachStep } from "../../definition/types";
import { resolveValue } from "../../template";
import { show } from "../conditions";
import type { StepBase } from "../step";
import type { Step } from "../types";
import { iterationWords, joinPlace, placed, type End, type Scope, type Walk, type WalkContext } from "./types";

/**
 * For each: the steps once per item of the list its `items` names (at most max_items), with
 * `{{item}}` and `{{index}}`; the entry counts how the items went.
 */
export async function forEachStep(w: Walk, step: ForEachStep, scope: Scope): Promise<End | null> {
  const { runner, redactor, timezone } = w.deps;
  const { clock } = w.deps.app;
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
    const entry = runner.record(w.blank(base, scope, { status: "failed", error: problem, input: { items: step.items } }));
    w.noted(scope, step.id, entry);
    return { kind: "finish", status: "failed", reason: `${where}: ${problem}` };
  }
  const items = resolved!.value as unknown[];
  const cap = Math.min(step.max_items ?? LIMITS.forEachDefault, LIMITS.forEachMax);
  const running = items.slice(0, cap);
  const notRun = items.length - running.length;
  const counts = { items: items.length, succeeded: 0, failed: 0, skipped: 0, not_run: notRun };
  const entry = runner.record(
    w.blank(base, scope, {
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
    w.noted(scope, step.id, entry);
  };
  for (const [index, item] of running.entries()) {
    const itemScope: Scope = { iteration: [...scope.iteration, index], place: joinPlace(scope.place, step.id), ctx: withItem(scope.ctx, item, index) };
    const before = runner.steps.length;
    const end = await w.list(step.steps, itemScope);
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
