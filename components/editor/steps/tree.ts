import type { Definition, Step, StepCondition, StepConditions } from "@/lib/definition";
import { actionOf, type ActionSlot, type Catalog, type TransformDraft } from "../draft";
import { fromForm, toForm } from "../fields";
import { NO_TIMING, timingFromForm, timingToForm } from "../timing";

/**
 * A version 2 step list as the editor holds it: plain data, changed only through the functions
 * here (pure, tested in tests/unit/editor-steps.test.ts). Every step has a `key` (React keys, and
 * how a change names its step: ids are editable) and its `id` as typed. An action step keeps an
 * ActionSlot, so the forms, "Change" and the preview work as they do for a simple applet.
 */

export interface ConditionRow {
  key: number;
  field: string;
  op: string;
  /** As the definition stores it: a number for a number field, a list for in/not_in; undefined when not typed. */
  value?: unknown;
}
export interface ConditionGroup {
  key: number;
  mode: "all" | "any";
  items: (ConditionRow | ConditionGroup)[];
}
export const isGroup = (c: ConditionRow | ConditionGroup): c is ConditionGroup => "items" in c;

export interface PathDraft {
  key: number;
  name: string;
  conditions: ConditionGroup;
  steps: StepDraft[];
}

interface Base {
  key: number;
  id: string;
}
export type StepDraft =
  | (Base & { kind: "action"; slot: ActionSlot; when: ConditionGroup | null; continueOnError: boolean })
  | (Base & { kind: "filter"; code: string })
  | (Base & { kind: "ai" } & TransformDraft)
  | (Base & { kind: "if"; conditions: ConditionGroup; then: StepDraft[]; else: StepDraft[] | null })
  | (Base & { kind: "paths"; mode: "first" | "all"; paths: PathDraft[]; otherwise: StepDraft[] | null })
  | (Base & { kind: "for_each"; items: string; maxItems: string; continueOnError: boolean; steps: StepDraft[] })
  | (Base & { kind: "stop"; status: "succeeded" | "skipped"; reason: string });
export type StepKind = StepDraft["kind"];
export type StepOf<K extends StepKind> = Extract<StepDraft, { kind: K }>;

/** What "Add step" offers, in its order, with the words it uses. */
export const STEP_KINDS: { kind: StepKind; label: string; help: string }[] = [
  { kind: "action", label: "Action", help: "Send, post, write: any action" },
  { kind: "if", label: "Only if", help: "Conditions, then steps, else steps" },
  { kind: "paths", label: "Paths", help: "Named paths with conditions, and otherwise" },
  { kind: "for_each", label: "For each", help: "Steps for every item of a list" },
  { kind: "stop", label: "Stop", help: "End the run here" },
  { kind: "filter", label: "Filter code", help: "JavaScript: skip() or set()" },
  { kind: "ai", label: "AI step", help: "Ask a model; its answer is an ingredient" },
];
export const KIND_LABEL: Record<StepKind, string> = Object.fromEntries(STEP_KINDS.map((k) => [k.kind, k.label])) as Record<StepKind, string>;

/** Hands out keys: the draft's counter, advanced by every key handed out. */
export type Fresh = () => number;

export const emptyGroup = (fresh: Fresh): ConditionGroup => ({ key: fresh(), mode: "all", items: [{ key: fresh(), field: "", op: "gt" }] });
const slot = (key: number): ActionSlot => ({ key, type: null, cfg: {}, original: {}, stash: {}, previousType: null, timing: NO_TIMING });

/** A new step of `kind` with the id `id` (see freeId). */
export function newStep(kind: StepKind, id: string, fresh: Fresh): StepDraft {
  const key = fresh();
  switch (kind) {
    case "action":
      return { key, id, kind, slot: slot(key), when: null, continueOnError: false };
    case "filter":
      return { key, id, kind, code: "" };
    case "ai":
      return { key, id, kind, model: "openai/gpt-4o-mini", prompt: "", output: id, json: false };
    case "if":
      return { key, id, kind, conditions: emptyGroup(fresh), then: [], else: null };
    case "paths":
      return { key, id, kind, mode: "first", paths: [{ key: fresh(), name: "path_1", conditions: emptyGroup(fresh), steps: [] }], otherwise: null };
    case "for_each":
      return { key, id, kind, items: "", maxItems: "", continueOnError: false, steps: [] };
    case "stop":
      return { key, id, kind, status: "skipped", reason: "" };
  }
}

/** The first `<kind>_<n>` no step uses yet (`if_1`, `action_3`): the ids the server would give. */
export function freeId(steps: StepDraft[], kind: StepKind): string {
  const taken = new Set(everyStep(steps).map((s) => s.id));
  let n = 1;
  while (taken.has(`${kind}_${n}`)) n++;
  return `${kind}_${n}`;
}

/** The step lists inside a step, each with the name its definition path uses (`then`, `paths.1.steps`). */
export function listsOf(s: StepDraft): { name: string; label: string; steps: StepDraft[] }[] {
  switch (s.kind) {
    case "if":
      return [{ name: "then", label: "Then", steps: s.then }, ...(s.else ? [{ name: "else", label: "Else", steps: s.else }] : [])];
    case "paths":
      return [...s.paths.map((p, i) => ({ name: `paths.${i}.steps`, label: p.name, steps: p.steps })), ...(s.otherwise ? [{ name: "otherwise", label: "Otherwise", steps: s.otherwise }] : [])];
    case "for_each":
      return [{ name: "steps", label: "Each item", steps: s.steps }];
    default:
      return [];
  }
}

function withLists(s: StepDraft, f: (list: StepDraft[], name: string) => StepDraft[]): StepDraft {
  switch (s.kind) {
    case "if":
      return { ...s, then: f(s.then, "then"), else: s.else ? f(s.else, "else") : null };
    case "paths":
      return { ...s, paths: s.paths.map((p, i) => ({ ...p, steps: f(p.steps, `paths.${i}.steps`) })), otherwise: s.otherwise ? f(s.otherwise, "otherwise") : null };
    case "for_each":
      return { ...s, steps: f(s.steps, "steps") };
    default:
      return s;
  }
}

/** Every step, depth first in written order. */
export function everyStep(steps: StepDraft[]): StepDraft[] {
  return steps.flatMap((s) => [s, ...listsOf(s).flatMap((l) => everyStep(l.steps))]);
}

/** The step with `key` changed by `change`, wherever it sits. */
export function updateStep(steps: StepDraft[], key: number, change: (s: StepDraft) => StepDraft): StepDraft[] {
  return steps.map((s) => (s.key === key ? change(s) : withLists(s, (list) => updateStep(list, key, change))));
}

export function removeStep(steps: StepDraft[], key: number): StepDraft[] {
  return steps.filter((s) => s.key !== key).map((s) => withLists(s, (list) => removeStep(list, key)));
}

/** Moves the step one place up (-1) or down (+1) within its own list; at an end it stays. */
export function moveStep(steps: StepDraft[], key: number, by: -1 | 1): StepDraft[] {
  const i = steps.findIndex((s) => s.key === key);
  if (i >= 0) {
    const j = i + by;
    if (j < 0 || j >= steps.length) return steps;
    const out = [...steps];
    [out[i], out[j]] = [out[j]!, out[i]!];
    return out;
  }
  return steps.map((s) => withLists(s, (list) => moveStep(list, key, by)));
}

/** Where a new step goes: the top-level list (`parent` null), or a list inside step `parent`. */
export interface ListRef {
  parent: number | null;
  /** The list's name under its step: `then`, `else`, `otherwise`, `steps`, `paths.<i>.steps`. */
  list: string;
}

export function appendStep(steps: StepDraft[], where: ListRef, step: StepDraft): StepDraft[] {
  if (where.parent === null) return [...steps, step];
  return updateStep(steps, where.parent, (s) => withLists(s, (list, name) => (name === where.list ? [...list, step] : list)));
}

// ---- conditions ---------------------------------------------------------------------------------

const VALUELESS = new Set(["exists", "is_empty"]);
export const needsValue = (op: string): boolean => !VALUELESS.has(op);

export function conditionsFromDef(c: StepConditions, fresh: Fresh): ConditionGroup {
  const mode = "all" in c ? "all" : "any";
  const list = ("all" in c ? c.all : c.any);
  return {
    key: fresh(),
    mode,
    items: list.map((x) => ("field" in x ? { key: fresh(), field: x.field, op: x.op, ...(x.value !== undefined ? { value: x.value } : {}) } : conditionsFromDef(x, fresh))),
  };
}

export function conditionsToDef(g: ConditionGroup): StepConditions {
  const items = g.items.map((x): StepCondition | StepConditions =>
    isGroup(x) ? conditionsToDef(x) : { field: x.field.trim(), op: x.op, ...(needsValue(x.op) || x.value !== undefined ? { value: x.value } : {}) },
  );
  return g.mode === "all" ? { all: items } : { any: items };
}

// ---- definition ⇄ tree ---------------------------------------------------------------------------

/** A stored step list as the tree: the inverse of `stepsToDef`. */
export function stepsFromDef(catalog: Catalog, steps: Step[], fresh: Fresh): StepDraft[] {
  return steps.map((s): StepDraft => {
    const key = fresh();
    const base = { key, id: s.id };
    switch (s.type) {
      case "filter":
        return { ...base, kind: "filter", code: (s as { code: string }).code };
      case "ai": {
        const a = s as Extract<Step, { type: "ai" }>;
        return { ...base, kind: "ai", model: a.model, prompt: a.prompt, output: a.output, json: a.json };
      }
      case "if": {
        const x = s as Extract<Step, { type: "if" }>;
        return { ...base, kind: "if", conditions: conditionsFromDef(x.conditions, fresh), then: stepsFromDef(catalog, x.then, fresh), else: x.else ? stepsFromDef(catalog, x.else, fresh) : null };
      }
      case "paths": {
        const x = s as Extract<Step, { type: "paths" }>;
        return {
          ...base,
          kind: "paths",
          mode: x.mode,
          paths: x.paths.map((p) => ({ key: fresh(), name: p.name, conditions: conditionsFromDef(p.conditions, fresh), steps: stepsFromDef(catalog, p.steps, fresh) })),
          otherwise: x.otherwise ? stepsFromDef(catalog, x.otherwise, fresh) : null,
        };
      }
      case "for_each": {
        const x = s as Extract<Step, { type: "for_each" }>;
        return { ...base, kind: "for_each", items: x.items, maxItems: x.max_items !== undefined ? String(x.max_items) : "", continueOnError: Boolean(x.continue_on_error), steps: stepsFromDef(catalog, x.steps, fresh) };
      }
      case "stop": {
        const x = s as Extract<Step, { type: "stop" }>;
        return { ...base, kind: "stop", status: x.status, reason: x.reason ?? "" };
      }
      default: {
        const a = s as Extract<Step, { config: Record<string, unknown> }>;
        const filled: ActionSlot = { ...slot(key), type: a.type, cfg: toForm(actionOf(catalog, a.type)?.fields ?? [], a.config), original: a.config, timing: timingToForm(a.timing) };
        return { ...base, kind: "action", slot: filled, when: a.when ? conditionsFromDef(a.when, fresh) : null, continueOnError: Boolean(a.continue_on_error) };
      }
    }
  });
}

/**
 * The tree as the definition's `steps`, and each written step's path (`steps.1.then.0`) by key.
 * An action still being picked is not part of the definition (as in a simple applet), so the
 * paths count only the steps written.
 */
export function stepsToDef(catalog: Catalog, steps: StepDraft[], base = "steps", paths = new Map<number, string>()): { steps: Step[]; paths: Map<number, string> } {
  const out: Step[] = [];
  for (const s of steps) {
    if (s.kind === "action" && s.slot.type === null) continue;
    const path = `${base}.${out.length}`;
    paths.set(s.key, path);
    const sub = (list: StepDraft[], name: string) => stepsToDef(catalog, list, `${path}.${name}`, paths).steps;
    const id = s.id.trim();
    switch (s.kind) {
      case "action": {
        const type = s.slot.type!;
        const timing = timingFromForm(s.slot.timing);
        out.push({
          id,
          type,
          config: fromForm(actionOf(catalog, type)?.fields ?? [], s.slot.cfg, s.slot.original),
          ...(s.when ? { when: conditionsToDef(s.when) } : {}),
          ...(s.continueOnError ? { continue_on_error: true } : {}),
          ...(timing ? { timing } : {}),
        });
        break;
      }
      case "filter":
        out.push({ id, type: "filter", code: s.code });
        break;
      case "ai":
        out.push({ id, type: "ai", model: s.model, prompt: s.prompt, output: s.output || "output", json: s.json });
        break;
      case "if":
        out.push({ id, type: "if", conditions: conditionsToDef(s.conditions), then: sub(s.then, "then"), ...(s.else ? { else: sub(s.else, "else") } : {}) });
        break;
      case "paths":
        out.push({
          id,
          type: "paths",
          mode: s.mode,
          paths: s.paths.map((p, i) => ({ name: p.name, conditions: conditionsToDef(p.conditions), steps: sub(p.steps, `paths.${i}.steps`) })),
          ...(s.otherwise ? { otherwise: sub(s.otherwise, "otherwise") } : {}),
        });
        break;
      case "for_each":
        out.push({ id, type: "for_each", items: s.items, ...(s.maxItems.trim() ? { max_items: Number(s.maxItems) } : {}), ...(s.continueOnError ? { continue_on_error: true } : {}), steps: sub(s.steps, "steps") });
        break;
      case "stop":
        out.push({ id, type: "stop", status: s.status, ...(s.reason.trim() ? { reason: s.reason } : {}) });
        break;
    }
  }
  return { steps: out, paths };
}

/** The written steps' paths by key (see stepsToDef). */
export const stepPaths = (catalog: Catalog, steps: StepDraft[]): Map<number, string> => stepsToDef(catalog, steps).paths;

/** The step a definition path is about (the longest step path it starts with), and what follows. */
export function stepAt(steps: StepDraft[], paths: Map<number, string>, path: string): { step: StepDraft; rest: string } | null {
  let best: { step: StepDraft; rest: string; length: number } | null = null;
  for (const s of everyStep(steps)) {
    const p = paths.get(s.key);
    if (!p || !(path === p || path.startsWith(`${p}.`))) continue;
    if (!best || p.length > best.length) best = { step: s, rest: path.slice(p.length + 1), length: p.length };
  }
  return best ? { step: best.step, rest: best.rest } : null;
}

export type { Definition };
