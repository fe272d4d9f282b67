import { stepIdOf, type Step } from "@/lib/executor/types";

/**
 * The run's journal (`runs.steps`, in execution order) as the tree the run page shows: each
 * if/paths with its branches (the one taken with its steps, the others greyed with the reason),
 * each for_each with its items and counts. Pure: built from the stored entries alone, so old rows
 * (no ids, no places) are a flat list as before.
 */
export interface JournalNode {
  entry: Step;
  /** Position in the stored list, from 1 (the card's test id). */
  position: number;
  /** The step's id (derived for old rows: `action_2`). */
  id: string;
  branches?: JournalBranch[];
  loop?: JournalLoop;
}

export interface JournalBranch {
  name: string;
  taken: boolean;
  /** Why it was taken or not (the condition's words). */
  why: string | null;
  children: JournalNode[];
}

export interface JournalLoop {
  items: JournalItem[];
  counts: { items: number; succeeded: number; failed: number; skipped: number; not_run: number };
  /** "97 succeeded, 3 failed". */
  summary: string;
}

export interface JournalItem {
  index: number;
  status: "succeeded" | "failed" | "skipped" | "running";
  children: JournalNode[];
}

export function journalTree(steps: readonly Step[]): JournalNode[] {
  const groups = new Map<string, { entry: Step; position: number }[]>();
  steps.forEach((entry, i) => {
    const key = groupKey(entry.place ?? "", entry.iteration ?? []);
    let list = groups.get(key);
    if (!list) groups.set(key, (list = []));
    list.push({ entry, position: i + 1 });
  });
  const at = (place: string, iteration: number[]): JournalNode[] => (groups.get(groupKey(place, iteration)) ?? []).map(({ entry, position }) => node(entry, position));
  const join = (place: string, part: string) => (place ? `${place}/${part}` : part);

  function node(entry: Step, position: number): JournalNode {
    const id = stepIdOf(entry);
    const place = entry.place ?? "";
    const iteration = entry.iteration ?? [];
    const n: JournalNode = { entry, position, id };
    if (entry.kind === "if") {
      const decided = entry.decision === "then" || entry.decision === "else" ? entry.decision : null;
      n.branches = (["then", "else"] as const).map((name) => ({
        name,
        taken: decided === name,
        why: decided === name ? (entry.why ?? null) : decided ? `not taken: ${entry.why ?? ""}`.trim() : null,
        children: decided === name ? at(join(place, `${id}:${name}`), iteration) : [],
      }));
    } else if (entry.kind === "paths") {
      const out = (entry.output ?? {}) as { taken?: string[]; checked?: { name: string; holds: boolean; why: string }[] };
      const taken = out.taken ?? [];
      const checked = out.checked ?? [];
      n.branches = checked.map((c) => ({
        name: c.name,
        taken: taken.includes(c.name),
        why: taken.includes(c.name) ? c.why : `not taken: ${c.why}`,
        children: taken.includes(c.name) ? at(join(place, `${id}:${c.name}`), iteration) : [],
      }));
      if (taken.includes("otherwise") && !checked.some((c) => c.name === "otherwise")) {
        n.branches.push({ name: "otherwise", taken: true, why: "no path's conditions held", children: at(join(place, `${id}:otherwise`), iteration) });
      }
    } else if (entry.kind === "for_each") {
      const inner = join(place, id);
      const items: JournalItem[] = [];
      // Items are recorded in order, each iteration's entries under the same key.
      for (let index = 0; ; index++) {
        const children = at(inner, [...iteration, index]);
        if (children.length === 0) break;
        items.push({ index, status: itemStatus(children), children });
      }
      const c = (entry.output ?? {}) as Partial<JournalLoop["counts"]>;
      const counts = {
        items: c.items ?? items.length,
        succeeded: c.succeeded ?? items.filter((i) => i.status === "succeeded").length,
        failed: c.failed ?? items.filter((i) => i.status === "failed").length,
        skipped: c.skipped ?? items.filter((i) => i.status === "skipped").length,
        not_run: c.not_run ?? 0,
      };
      n.loop = { items, counts, summary: loopSummary(counts, entry.status === "running" || entry.status === "failed" ? items.length : null) };
    }
    return n;
  }

  return at("", []);
}

function groupKey(place: string, iteration: readonly number[]): string {
  return `${place}|${iteration.join(".")}`;
}

/** An item failed when a step in it failed, was skipped when its filter skipped it (and nothing failed). */
function itemStatus(children: JournalNode[]): JournalItem["status"] {
  const all: Step[] = [];
  const collect = (nodes: JournalNode[]) => {
    for (const n of nodes) {
      all.push(n.entry);
      for (const b of n.branches ?? []) collect(b.children);
      for (const i of n.loop?.items ?? []) collect(i.children);
    }
  };
  collect(children);
  if (all.some((s) => s.status === "failed")) return "failed";
  if (all.some((s) => s.status === "running")) return "running";
  if (all.some((s) => s.kind === "filter" && s.status === "skipped")) return "skipped";
  return "succeeded";
}

/** "97 succeeded, 3 failed, 2 not run (max_items)"; a loop cut short says how far it got. */
export function loopSummary(counts: JournalLoop["counts"], reached: number | null): string {
  const parts: string[] = [];
  if (counts.succeeded) parts.push(`${counts.succeeded.toLocaleString("en-US")} succeeded`);
  if (counts.failed) parts.push(`${counts.failed.toLocaleString("en-US")} failed`);
  if (counts.skipped) parts.push(`${counts.skipped.toLocaleString("en-US")} skipped`);
  if (counts.not_run) parts.push(`${counts.not_run.toLocaleString("en-US")} not run (past max_items)`);
  const head = `${counts.items.toLocaleString("en-US")} item${counts.items === 1 ? "" : "s"}`;
  if (reached !== null && reached > 0 && reached < counts.items - counts.not_run) parts.push(`stopped at item ${reached - 1}`);
  return parts.length ? `${head}: ${parts.join(", ")}` : head;
}

/** A step's heading: version 1's words for its steps, the id and kind for the others. */
export function stepTitle(s: Step): string {
  const id = stepIdOf(s);
  switch (s.kind) {
    case "action":
      return s.index !== undefined && id === `action_${s.index + 1}` ? `Action ${s.index + 1}: ${s.name}` : `${id}: ${s.name}`;
    case "filter":
      return id === "filter" ? "Filter code" : `${id}: filter code`;
    case "transform":
      return id === "ai" ? `AI transform (${s.name})` : `${id}: AI step (${s.name})`;
    case "if":
      return `${id}: only if`;
    case "paths":
      return `${id}: paths`;
    case "for_each":
      return `${id}: for each`;
    case "stop":
      return `${id}: stop`;
    case "wait":
      return `${id}: wait (${s.name.replace("_", " ")})`;
  }
}

/**
 * A wait step the run is parked at is stored as `running` (the step has not ended) with the
 * decision `waiting`: the run log shows it as waiting, with what it waits for, not as running. A
 * run cancelled while it waited leaves that entry as it was: it reads cancelled.
 */
export function parkedWaitStatus(s: Pick<Step, "kind" | "status" | "decision">, runStatus?: string): "waiting" | "cancelled" | null {
  if (s.kind !== "wait" || s.status !== "running" || s.decision !== "waiting") return null;
  return runStatus === "cancelled" ? "cancelled" : "waiting";
}
