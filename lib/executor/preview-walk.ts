import { LIMITS, type ActionStep, type Definition, type ForEachStep, type IfStep, type PathsStep, type Step, type StopStep } from "../definition/types";
import { renderTemplate, resolveValue, type TemplateContext } from "../template";
import { decide, show } from "./conditions";

/**
 * The editor's preview of a step list against a sample: which way each if and paths step would go
 * and why, which actions would run (an action's `when` too) and their configs rendered, and a
 * for_each's first items rendered with their `{{item}}` and `{{index}}`. Nothing is sent and no
 * code or model runs: filter code and AI steps are marked as not run (their vars and AI values come
 * from the request). The decisions are the executor's own (./conditions), so the preview and the
 * run agree.
 */
export interface PreviewStep {
  /** The step's path in the definition (`steps.1.then.0`). */
  path: string;
  id: string;
  type: string;
  /** The for_each iterations around the step (0-based), when inside one. */
  iteration?: number[];
  /** `run`: would run; `skipped`: its `when` does not hold; `not_run`: code or a model, not run here; `stop`: ends the run; `failed`: could not go on. */
  status: "run" | "skipped" | "not_run" | "stop" | "failed";
  /** if: `then` / `else`; paths: the names of the paths taken (`otherwise`, or none); action: `run` / `skip`. */
  decision?: string;
  /** paths: the names taken (empty: none). */
  taken?: string[];
  why?: string;
  /** An action's config, rendered. */
  rendered?: Record<string, unknown>;
  unresolved?: string[];
  /** for_each: how many items the list has. */
  items?: number;
}

/** A for_each's items rendered in the preview: enough to see `{{item}}` at work. */
export const PREVIEW_ITEMS = 3;
/** Entries in one preview, at most. */
const MAX_ENTRIES = 300;

export type PreviewRender = (step: ActionStep, ctx: TemplateContext) => { rendered: Record<string, unknown>; unresolved: string[] };

export function previewWalk(def: Pick<Definition, "steps">, ctx: TemplateContext & { ai?: Record<string, unknown> }, render: PreviewRender, timezone: string): PreviewStep[] {
  const out: PreviewStep[] = [];
  const base: TemplateContext = { ...ctx, steps: {}, ai: { ...(ctx.ai ?? {}) } };
  const note = (c: TemplateContext, id: string, status: string, output: unknown = null) => ((c.steps as Record<string, unknown>)[id] = { status, output });

  /** Walks a list; true when a stop step ends the run. */
  function list(steps: Step[], path: string, iteration: number[], c: TemplateContext): boolean {
    for (const [i, step] of steps.entries()) {
      if (out.length >= MAX_ENTRIES) return true;
      if (one(step, `${path}.${i}`, iteration, c)) return true;
    }
    return false;
  }

  function one(step: Step, path: string, iteration: number[], c: TemplateContext): boolean {
    const entry = (e: Omit<PreviewStep, "path" | "id" | "type" | "iteration">): PreviewStep => {
      const p: PreviewStep = { path, id: step.id, type: step.type, ...(iteration.length ? { iteration } : {}), ...e };
      out.push(p);
      return p;
    };
    switch (step.type) {
      case "filter":
        entry({ status: "not_run", why: "filter code does not run in the preview (Test filter runs it); its vars are the last test's" });
        return false;
      case "ai": {
        const s = step as Extract<Step, { type: "ai" }>;
        const ai = c.ai as Record<string, unknown>;
        if (!(s.output in ai)) ai[s.output] = `[AI output ${s.output}: not generated in preview]`;
        entry({ status: "not_run", why: "the model is not called in the preview; a stand-in marks where its answer goes" });
        return false;
      }
      case "if": {
        const s = step as IfStep;
        const d = decide(s.conditions, c);
        const branch = d.holds ? "then" : "else";
        const taken = branch === "then" || s.else?.length ? branch : "nothing";
        entry({ status: "run", decision: branch, why: `${d.why} → ${taken}` });
        note(c, s.id, "succeeded", { branch });
        return list(branch === "then" ? s.then : (s.else ?? []), `${path}.${branch}`, iteration, c);
      }
      case "paths": {
        const s = step as PathsStep;
        const checked: { name: string; index: number; holds: boolean; why: string }[] = [];
        for (const [index, p] of s.paths.entries()) {
          const d = decide(p.conditions, c);
          checked.push({ name: p.name, index, holds: d.holds, why: d.why });
          if (d.holds && s.mode === "first") break;
        }
        const holding = checked.filter((x) => x.holds);
        const taken = holding.length ? holding.map((x) => x.name) : s.otherwise ? ["otherwise"] : [];
        const why = holding.length ? holding.map((x) => `${x.why} → path '${x.name}'`).join("; ") : `${checked.map((x) => `'${x.name}': ${x.why}`).join("; ")} → ${s.otherwise ? "otherwise" : "no path"}`;
        entry({ status: "run", decision: taken.length ? taken.join(", ") : "none", taken, why });
        note(c, s.id, "succeeded", { taken });
        for (const x of holding) if (list(s.paths[x.index]!.steps, `${path}.paths.${x.index}.steps`, iteration, c)) return true;
        if (!holding.length && s.otherwise) return list(s.otherwise, `${path}.otherwise`, iteration, c);
        return false;
      }
      case "for_each": {
        const s = step as ForEachStep;
        const resolved = resolveValue(s.items, c, { timezone });
        if (resolved === null || !Array.isArray(resolved.value)) {
          const why = resolved === null ? `items must name a list with one {{…}} expression, such as {{trigger.body.items}}; got ${show(s.items)}` : `expected a list at ${resolved.expression}, got ${resolved.value === undefined ? "nothing" : show(resolved.value)}`;
          entry({ status: "failed", why });
          return true;
        }
        const items = resolved.value as unknown[];
        const cap = Math.min(s.max_items ?? LIMITS.forEachDefault, LIMITS.forEachMax);
        const shown = Math.min(items.length, cap, PREVIEW_ITEMS);
        entry({ status: "run", items: items.length, why: `${items.length} item${items.length === 1 ? "" : "s"} at ${resolved.expression}${shown < items.length ? `; the preview shows the first ${shown}` : ""}` });
        for (let index = 0; index < shown; index++) {
          const itemCtx = { ...c, item: items[index], index };
          if (list(s.steps, `${path}.steps`, [...iteration, index], itemCtx)) return true;
        }
        note(c, s.id, "succeeded", { items: items.length });
        return false;
      }
      case "stop": {
        const s = step as StopStep;
        const reason = s.reason ? renderTemplate(s.reason, c, { timezone }).value.trim() : "";
        entry({ status: "stop", decision: s.status, why: reason ? `the run ends ${s.status}: ${reason}` : `the run ends ${s.status}` });
        return true;
      }
      default: {
        const s = step as ActionStep;
        if (s.when) {
          const d = decide(s.when, c);
          if (!d.holds) {
            entry({ status: "skipped", decision: "skip", why: `${d.why} → skipped` });
            note(c, s.id, "skipped");
            return false;
          }
          entry({ status: "run", decision: "run", why: `${d.why} → run`, ...render(s, c) });
        } else entry({ status: "run", ...render(s, c) });
        note(c, s.id, "succeeded");
        return false;
      }
    }
  }

  list(def.steps, "steps", [], base);
  return out;
}
