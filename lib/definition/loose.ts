import { CONTROL_KINDS } from "./types";

/**
 * The steps of a definition that may not pass checkDefinition (a save being checked, the editor's
 * preview while it shows problems, a stored row of any release), each with its path, depth first in
 * written order: version 1's filter (`filter`), transform (`transform`) and actions (`actions.N`,
 * ids `action_N`), or version 2's steps (nested ones included). Anything unreadable is left out.
 */
export function looseSteps(raw: unknown): { id: string | null; type: string; step: Record<string, unknown>; path: string }[] {
  if (typeof raw !== "object" || raw === null) return [];
  const d = raw as { version?: unknown; actions?: unknown; steps?: unknown; filter?: unknown; transform?: unknown };
  const out: { id: string | null; type: string; step: Record<string, unknown>; path: string }[] = [];
  const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (d.version !== 2 && Array.isArray(d.actions)) {
    if (isRecord(d.filter)) out.push({ id: "filter", type: "filter", step: d.filter, path: "filter" });
    if (isRecord(d.transform)) out.push({ id: "ai", type: "ai", step: d.transform, path: "transform" });
    d.actions.forEach((a, i) => isRecord(a) && out.push({ id: `action_${i + 1}`, type: String(a.type), step: a, path: `actions.${i}` }));
    return out;
  }
  const visit = (list: unknown, base: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((s, i) => {
      if (!isRecord(s)) return;
      const path = `${base}.${i}`;
      out.push({ id: typeof s.id === "string" ? s.id : null, type: String(s.type), step: s, path });
      visit(s.then, `${path}.then`);
      visit(s.else, `${path}.else`);
      if (Array.isArray(s.paths)) s.paths.forEach((p, j) => isRecord(p) && visit(p.steps, `${path}.paths.${j}.steps`));
      visit(s.otherwise, `${path}.otherwise`);
      if (s.type === "for_each") visit(s.steps, `${path}.steps`);
    });
  };
  visit(d.steps, "steps");
  return out;
}

/** The action steps among looseSteps (version 1's actions, version 2's action steps), with their configs. */
export function looseActions(raw: unknown): { id: string | null; type: string; config: Record<string, unknown>; path: string }[] {
  return looseSteps(raw)
    .filter((s) => !(CONTROL_KINDS as readonly string[]).includes(s.type) && s.path !== "filter" && s.path !== "transform")
    .map((s) => {
      const c = s.step.config;
      return { id: s.id, type: s.type, config: typeof c === "object" && c !== null && !Array.isArray(c) ? (c as Record<string, unknown>) : {}, path: s.path };
    });
}

/** Keys of a step that hold its nested steps (not its own templates). */
export const NESTED_KEYS = new Set(["then", "else", "paths", "otherwise"]);
