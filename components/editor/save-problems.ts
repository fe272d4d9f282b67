import type { Problem } from "@/lib/definition/types";
import { shownName, snapshotOf, typedSlots, type Catalog, type Draft, type TransformDraft } from "./draft";
import { timedFromForm, timingFromForm } from "./timing";
import { stepAt, stepsToDef } from "./steps/tree";

/**
 * A save's problems on the draft: where each one's path points in the editor (a field, an action
 * slot, a step), and whether it still holds after an edit. Pure, like the draft itself.
 */

/** Where a problem's path (`definition.actions.0.config.url`) points in the draft. */
type ProblemPlace =
  | { part: "name" }
  /**
   * `field`: a path under `definition.trigger.config.<field>`; `whole`: the trigger itself or its
   * type (`definition.trigger`, `definition.trigger.type`).
   */
  | { part: "trigger"; field?: string; whole: boolean }
  | { part: "actions" }
  /**
   * `index` counts the definition's actions (slots still being picked are skipped); `whole`: the
   * action, its type or its config as a whole.
   */
  | { part: "action"; index: number; field?: string; whole: boolean; timing?: string }
  /** `field`: the path under `definition.timed`, cut to the part and its field (`quiet_hours.start`). */
  | { part: "timed"; field: string }
  | { part: "transform"; field?: string }
  | { part: "filter" | "retry" | "timezone" | "applet" }
  /** A step of a step list: `path` is under the definition (`steps.2.then.0.config.url`). */
  | { part: "step"; path: string };

function placeOf(path: string): ProblemPlace {
  if (path === "name") return { part: "name" };
  const [root, part, ...rest] = path.split(".");
  if (root !== "definition") return { part: "applet" };
  switch (part) {
    case "trigger":
      return { part: "trigger", field: rest[0] === "config" ? rest[1] : undefined, whole: rest.length === 0 || (rest.length === 1 && rest[0] === "type") };
    case "actions": {
      if (rest.length === 0) return { part: "actions" };
      const index = Number(rest[0]);
      if (!Number.isInteger(index) || index < 0) return { part: "actions" };
      const [, sub, field] = rest;
      // The action's timing: "" for the timing as a whole, else its field (`at`, `lateness`).
      if (sub === "timing") return { part: "action", index, whole: false, timing: field ?? "" };
      return { part: "action", index, field: sub === "config" ? field : undefined, whole: sub === undefined || (rest.length === 2 && (sub === "config" || sub === "type")) };
    }
    case "transform":
      return { part: "transform", field: rest[0] };
    case "steps":
      return { part: "step", path: ["steps", ...rest].join(".") };
    case "filter":
    case "retry":
    case "timezone":
      return { part };
    case "timed":
      // A condition's problems are placed on its row: `conditions.all.0.op`.
      return { part: "timed", field: rest[0] === "conditions" ? rest.slice(0, 4).join(".") : rest.slice(0, 2).join(".") };
    default:
      return { part: "applet" };
  }
}

/**
 * What the part of the draft a problem is about holds now. A problem stays shown while this is
 * what it was when the server reported it: editing that field (or adding the missing action)
 * clears it without another save.
 */
export function problemState(catalog: Catalog, draft: Draft, path: string): string {
  const place = placeOf(path);
  switch (place.part) {
    case "name":
      return shownName(catalog, draft).trim();
    case "trigger":
      return JSON.stringify([draft.trigger.type, place.field ? draft.trigger.cfg[place.field] : draft.trigger.cfg]);
    case "actions":
      return JSON.stringify(typedSlots(draft).map((a) => a.type));
    case "action": {
      const slot = typedSlots(draft)[place.index];
      if (place.timing !== undefined) {
        // Per field: fixing the offset leaves a lateness problem shown.
        const timing = slot ? (timingFromForm(slot.timing) as Record<string, unknown> | undefined) : undefined;
        return JSON.stringify(timing ? (place.timing ? (timing[place.timing] ?? null) : timing) : null);
      }
      return JSON.stringify(slot ? [slot.type, place.field ? slot.cfg[place.field] : slot.cfg] : null);
    }
    case "timed":
      return JSON.stringify(place.field.split(".").reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), timedFromForm(draft.timed)) ?? null);
    case "transform":
      return JSON.stringify(place.field && draft.transform ? draft.transform[place.field as keyof TransformDraft] : draft.transform);
    case "filter":
      return JSON.stringify(draft.filterCode);
    case "retry":
      return draft.maxAttempts;
    case "timezone":
      return draft.timezone;
    case "applet":
      return snapshotOf(catalog, draft);
    case "step": {
      const at = draft.steps ? stepAt(draft.steps, stepsToDef(catalog, draft.steps).paths, place.path) : null;
      return at ? JSON.stringify(at.step) : snapshotOf(catalog, draft);
    }
  }
}

/** A save's problem and what its part of the draft held when the server reported it. */
export interface ReportedProblem extends Problem {
  at: string;
}

export function reportProblems(catalog: Catalog, draft: Draft, problems: Problem[]): ReportedProblem[] {
  return problems.map((p) => ({ ...p, at: problemState(catalog, draft, p.path) }));
}

/** The reported problems that still hold: their part of the draft is unchanged since the save. */
export function openProblems(catalog: Catalog, draft: Draft, reported: ReportedProblem[]): Problem[] {
  return reported.filter((p) => problemState(catalog, draft, p.path) === p.at).map(({ path, message }) => ({ path, message }));
}

/** Messages by field name, for ConfigForm and the transform form. */
export type FieldErrors = Map<string, string[]>;

export interface SlotProblems {
  /** Under the action's config, by field. */
  fields: FieldErrors;
  /** About the action as a whole: its type, or its config as a whole (unknown keys). */
  own: string[];
  /** Under the action's timing, by field (`at`, `anchor`, `lateness`); "" for the timing as a whole. */
  timing: FieldErrors;
}

/** Problems sorted to the place in the editor that shows them. */
export interface PlacedProblems {
  all: Problem[];
  name: string[];
  triggerType: string[];
  trigger: FieldErrors;
  actions: string[];
  /** By slot key. */
  slots: Map<number, SlotProblems>;
  filter: string[];
  transform: FieldErrors;
  /** Under the applet's timed settings, by `part.field` (`quiet_hours.start`), or the part alone. */
  timed: FieldErrors;
  /** A step's own problems (not its action's fields), by step key, each naming the part it is about. */
  steps: Map<number, string[]>;
}

export function placeProblems(draft: Draft, problems: Problem[]): PlacedProblems {
  const out: PlacedProblems = { all: problems, name: [], triggerType: [], trigger: new Map(), actions: [], slots: new Map(), filter: [], transform: new Map(), timed: new Map(), steps: new Map() };
  const slots = typedSlots(draft);
  const paths = draft.steps ? stepsToDef({ triggers: [], actions: [] }, draft.steps).paths : new Map<number, string>();
  const add = (map: FieldErrors, key: string, message: string) => map.set(key, [...(map.get(key) ?? []), message]);
  for (const p of problems) {
    const place = placeOf(p.path);
    switch (place.part) {
      case "name":
        out.name.push(p.message);
        break;
      case "trigger":
        if (place.field !== undefined) add(out.trigger, place.field, p.message);
        else if (place.whole) out.triggerType.push(p.message);
        // Anything else (the config as a whole: unknown keys) is listed in the summary only.
        break;
      case "actions":
        out.actions.push(p.message);
        break;
      case "action": {
        const slot = slots[place.index];
        if (!slot) break;
        const placed: SlotProblems = out.slots.get(slot.key) ?? { fields: new Map(), own: [], timing: new Map() };
        if (place.timing !== undefined) add(placed.timing, place.timing, p.message);
        else if (place.field !== undefined) add(placed.fields, place.field, p.message);
        else if (place.whole) placed.own.push(p.message);
        out.slots.set(slot.key, placed);
        break;
      }
      case "transform":
        if (place.field !== undefined) add(out.transform, place.field, p.message);
        break;
      case "filter":
        out.filter.push(p.message);
        break;
      case "timed":
        add(out.timed, place.field, p.message);
        break;
      case "step": {
        const at = draft.steps ? stepAt(draft.steps, paths, place.path) : null;
        if (!at) {
          out.actions.push(p.message);
          break;
        }
        const [sub, field] = at.rest.split(".");
        if (at.step.kind === "action" && (sub === "config" || sub === "timing" || sub === "type")) {
          const placed: SlotProblems = out.slots.get(at.step.slot.key) ?? { fields: new Map(), own: [], timing: new Map() };
          if (sub === "timing") add(placed.timing, field ?? "", p.message);
          else if (sub === "config" && field !== undefined) add(placed.fields, field, p.message);
          else placed.own.push(p.message);
          out.slots.set(at.step.slot.key, placed);
        } else out.steps.set(at.step.key, [...(out.steps.get(at.step.key) ?? []), at.rest ? `${at.rest}: ${p.message}` : p.message]);
        break;
      }
      default:
        // Retry, time zone and the applet as a whole: listed in the summary only.
        break;
    }
  }
  return out;
}
