import type { Meta, MetaAction, MetaTrigger } from "@/lib/api/queries";
import type { FieldMeta } from "@/lib/plugin";
import { asLinear, type Definition as DefinitionV2, type DefinitionV1 as Definition } from "@/lib/definition/types";
import { defaultsFor, fromForm, toForm, type FormConfig } from "./fields";
import { NO_TIMING, timedFromForm, timedToForm, timingFromForm, timingToForm, type TimedDraft, type TimingDraft } from "./timing";
import { appendStep, everyStep, freeId, newStep, removeStep, stepsFromDef, stepsToDef, updateStep, type Fresh, type ListRef, type StepDraft, type StepKind } from "./steps/tree";

/** What the editor reads and saves: the linear form (version 1) for a simple applet, else the step list. */
export type EditorDefinition = Definition | DefinitionV2;

/**
 * The applet editor's state as plain data, and every change to it as a reducer action: no React,
 * no browser, so it is tested on its own (tests/unit/editor-draft.test.ts). The editor renders a
 * draft; a save sends `buildDefinition(draft)`.
 */

/** The plug-ins the forms are generated from: GET /api/meta's lists. */
export type Catalog = Pick<Meta, "triggers" | "actions">;

/** One plug-in's form values, and the stored config, so keys the form does not know survive an edit. */
export interface PluginDraft {
  cfg: FormConfig;
  original: Record<string, unknown>;
}

export interface TriggerDraft extends PluginDraft {
  /** null while the trigger is being picked. */
  type: string | null;
}

export interface ActionSlot extends PluginDraft {
  /** Stable across removals, for React keys and for addressing a slot in actions. */
  key: number;
  /** null while this slot's action is being picked: such a slot is not part of the definition. */
  type: string | null;
  /** What each type held when "Change" left it: picking that type again brings it back. */
  stash: Record<string, PluginDraft>;
  /** The type "Change" left, offered as "Keep …" while picking. */
  previousType: string | null;
  /** When it runs: with the event, or at an offset from an anchor. Kept across "Change". */
  timing: TimingDraft;
}

export interface TransformDraft {
  model: string;
  prompt: string;
  output: string;
  json: boolean;
}

export interface Draft {
  name: string;
  /** Until the name is typed in, it follows the trigger and actions ("Webhook → Slack"). */
  nameTouched: boolean;
  trigger: TriggerDraft;
  /** What "Change" on the trigger left behind, by type. */
  triggerStash: Record<string, PluginDraft>;
  /** The type "Change" left, offered as "Keep …" while picking. */
  previousTrigger: string | null;
  actions: ActionSlot[];
  nextKey: number;
  /** null: no filter step. */
  filterCode: string | null;
  /** null: no AI transform step. */
  transform: TransformDraft | null;
  /** As typed; empty means the default. */
  maxAttempts: string;
  /** Empty means the default (the schedule's zone, else UTC). */
  timezone: string;
  /** The applet's settings for its timed actions: subject, supersede, contact, quiet hours, cap. */
  timed: TimedDraft;
  /**
   * null: a simple applet (trigger → filter, AI, actions), edited as `actions`, `filterCode` and
   * `transform`. Otherwise the step list, which replaces those three.
   */
  steps: StepDraft[] | null;
}

export const NEW_TRANSFORM: TransformDraft = { model: "openai/gpt-4o-mini", prompt: "", output: "summary", json: false };

export const triggerOf = (catalog: Catalog, type: string | null | undefined): MetaTrigger | undefined => catalog.triggers.find((t) => t.type === type);
export const actionOf = (catalog: Catalog, type: string | null | undefined): MetaAction | undefined => catalog.actions.find((a) => a.type === type);

const emptySlot = (key: number): ActionSlot => ({ key, type: null, cfg: {}, original: {}, stash: {}, previousType: null, timing: NO_TIMING });

/**
 * A stored applet (or nothing, for a new one) as a draft: the inverse of `buildDefinition`. A step
 * list that has a linear form (asLinear) opens as the simple two-step flow; any other as steps.
 */
export function draftFromDefinition(catalog: Catalog, applet?: { name: string; definition: EditorDefinition }): Draft {
  const stored = applet?.definition;
  const linear = stored?.version === 2 ? asLinear(stored) : (stored ?? null);
  if (stored?.version === 2 && !linear) {
    let key = 0;
    const steps = stepsFromDef(catalog, stored.steps, () => key++);
    const base = draftFromDefinition(catalog, { name: applet!.name, definition: { version: 1, trigger: stored.trigger, actions: [], ...(stored.retry ? { retry: stored.retry } : {}), ...(stored.timezone ? { timezone: stored.timezone } : {}), ...(stored.timed ? { timed: stored.timed } : {}) } });
    return { ...base, actions: [], steps, nextKey: key };
  }
  const def = linear ?? undefined;
  const actions = def ? def.actions.map((a, i): ActionSlot => ({ ...emptySlot(i), type: a.type, cfg: toForm(actionOf(catalog, a.type)?.fields ?? [], a.config), original: a.config, timing: timingToForm(a.timing) })) : [emptySlot(0)];
  return {
    name: applet?.name ?? "",
    nameTouched: Boolean(applet),
    trigger: def ? { type: def.trigger.type, cfg: toForm(triggerOf(catalog, def.trigger.type)?.fields ?? [], def.trigger.config), original: def.trigger.config } : { type: null, cfg: {}, original: {} },
    triggerStash: {},
    previousTrigger: null,
    actions,
    nextKey: actions.length,
    filterCode: def?.filter?.code ?? null,
    transform: def?.transform ? { ...def.transform } : null,
    maxAttempts: def?.retry ? String(def.retry.max_attempts) : "",
    timezone: def?.timezone ?? "",
    timed: timedToForm(def?.timed),
    steps: null,
  };
}

export type DraftAction =
  /** `timeZone` is the reader's own: a new schedule starts in it. */
  | { kind: "pickTrigger"; trigger: MetaTrigger; timeZone: string }
  | { kind: "changeTrigger" }
  | { kind: "setTriggerConfig"; cfg: FormConfig }
  | { kind: "pickAction"; key: number; action: MetaAction }
  | { kind: "changeAction"; key: number }
  | { kind: "setActionConfig"; key: number; cfg: FormConfig }
  | { kind: "addAction" }
  | { kind: "removeAction"; key: number }
  /** `code: null` removes the filter step; "" adds an empty one. */
  | { kind: "setFilterCode"; code: string | null }
  | { kind: "addTransform" }
  | { kind: "setTransform"; transform: TransformDraft | null }
  | { kind: "setMaxAttempts"; value: string }
  | { kind: "setTimezone"; value: string }
  | { kind: "setTiming"; key: number; timing: TimingDraft }
  | { kind: "setTimed"; timed: TimedDraft }
  | { kind: "setName"; value: string }
  /** "Add step": in a simple applet an action, the first filter or AI step stay simple; anything else turns it into steps. */
  | { kind: "addStep"; step: StepKind; where: ListRef }
  /** Any other change of the step list, made by the pure functions of ./steps/tree. */
  | { kind: "steps"; change: (steps: StepDraft[], fresh: Fresh) => StepDraft[] };

export function draftReducer(draft: Draft, action: DraftAction): Draft {
  switch (action.kind) {
    case "pickTrigger": {
      const t = action.trigger;
      // Back to a type left with "Change": its settings come back as they were.
      const kept = draft.triggerStash[t.type] ?? { cfg: startingConfig(t.fields, action.timeZone), original: {} };
      return { ...draft, trigger: { type: t.type, ...kept }, previousTrigger: null };
    }
    case "changeTrigger": {
      const { type, cfg, original } = draft.trigger;
      if (!type) return draft;
      // Kept, so picking the same type again loses nothing.
      return { ...draft, trigger: { ...draft.trigger, type: null }, triggerStash: { ...draft.triggerStash, [type]: { cfg, original } }, previousTrigger: type };
    }
    case "setTriggerConfig":
      return { ...draft, trigger: { ...draft.trigger, cfg: action.cfg } };
    case "pickAction":
      return updateSlot(draft, action.key, (slot) => {
        const kept = slot.stash[action.action.type];
        return { ...slot, type: action.action.type, cfg: kept?.cfg ?? defaultsFor(action.action.fields), original: kept?.original ?? {}, previousType: null };
      });
    case "changeAction":
      return updateSlot(draft, action.key, (slot) => (slot.type ? { ...slot, type: null, previousType: slot.type, stash: { ...slot.stash, [slot.type]: { cfg: slot.cfg, original: slot.original } } } : slot));
    case "setActionConfig":
      return updateSlot(draft, action.key, (slot) => ({ ...slot, cfg: action.cfg }));
    case "addAction":
      if (draft.steps) return draftReducer(draft, { kind: "addStep", step: "action", where: { parent: null, list: "steps" } });
      return { ...draft, actions: [...draft.actions, emptySlot(draft.nextKey)], nextKey: draft.nextKey + 1 };
    case "addStep": {
      if (!draft.steps) {
        if (action.step === "action") return draftReducer(draft, { kind: "addAction" });
        if (action.step === "filter" && draft.filterCode === null) return { ...draft, filterCode: "" };
        if (action.step === "ai" && draft.transform === null) return { ...draft, transform: { ...NEW_TRANSFORM } };
      }
      const tree = asSteps(draft);
      return withSteps(tree, (steps, fresh) => appendStep(steps, action.where, newStep(action.step, freeId(steps, action.step), fresh)));
    }
    case "steps":
      return withSteps(draft, action.change);
    case "removeAction":
      if (draft.steps) return { ...draft, steps: removeStep(draft.steps, action.key) };
      // The last slot stays: an applet always has a place to pick its action.
      return draft.actions.length > 1 ? { ...draft, actions: draft.actions.filter((a) => a.key !== action.key) } : draft;
    case "setFilterCode":
      return { ...draft, filterCode: action.code };
    case "addTransform":
      return draft.transform ? draft : { ...draft, transform: { ...NEW_TRANSFORM } };
    case "setTransform":
      return { ...draft, transform: action.transform };
    case "setMaxAttempts":
      return { ...draft, maxAttempts: action.value };
    case "setTimezone":
      return { ...draft, timezone: action.value };
    case "setTiming":
      return updateSlot(draft, action.key, (slot) => ({ ...slot, timing: action.timing }));
    case "setTimed":
      return { ...draft, timed: action.timed };
    case "setName":
      return { ...draft, name: action.value, nameTouched: true };
  }
}

/** A freshly picked trigger's form: the fields' defaults, with zone fields in the reader's zone. */
function startingConfig(fields: FieldMeta[], timeZone: string): FormConfig {
  const cfg = defaultsFor(fields);
  for (const f of fields) if (f.kind === "timezone") cfg[f.name] = timeZone;
  return cfg;
}

function updateSlot(draft: Draft, key: number, change: (slot: ActionSlot) => ActionSlot): Draft {
  if (draft.steps) return { ...draft, steps: updateStep(draft.steps, key, (s) => (s.kind === "action" ? { ...s, slot: change(s.slot) } : s)) };
  return { ...draft, actions: draft.actions.map((a) => (a.key === key ? change(a) : a)) };
}

/** The step list changed by `change`, with fresh keys from the draft's counter. */
function withSteps(draft: Draft, change: (steps: StepDraft[], fresh: Fresh) => StepDraft[]): Draft {
  let next = draft.nextKey;
  const steps = change(draft.steps ?? [], () => next++);
  return { ...draft, steps, nextKey: next };
}

/**
 * A simple applet as the equivalent step list (the ids version 1's steps have: `filter`, `ai`,
 * `action_N`), for when a step it cannot say is added. Slots still being picked come along.
 */
export function asSteps(draft: Draft): Draft {
  if (draft.steps) return draft;
  let next = draft.nextKey;
  const fresh = () => next++;
  const steps: StepDraft[] = [];
  if (draft.filterCode !== null) steps.push({ key: fresh(), id: "filter", kind: "filter", code: draft.filterCode });
  if (draft.transform) steps.push({ key: fresh(), id: "ai", kind: "ai", ...draft.transform });
  // An action keeps its slot's key (the slot is the step's); one still being picked gets an id after the picked ones'.
  let n = 0;
  let extra = draft.actions.filter(isPicked).length;
  for (const slot of draft.actions) steps.push({ key: slot.key, id: `action_${slot.type !== null ? ++n : ++extra}`, kind: "action", slot, when: null, continueOnError: false });
  return { ...draft, steps, nextKey: next, actions: [], filterCode: null, transform: null };
}

export type PickedSlot = ActionSlot & { type: string };
export const isPicked = (slot: ActionSlot): slot is PickedSlot => slot.type !== null;

/** Every action slot, in written order (nested action steps too). */
export const allSlots = (draft: Draft): ActionSlot[] => (draft.steps ? everyStep(draft.steps).flatMap((s) => (s.kind === "action" ? [s.slot] : [])) : draft.actions);

/** The slots that are part of the definition, in order: a slot still being picked is not. */
export const typedSlots = (draft: Draft): PickedSlot[] => allSlots(draft).filter(isPicked);

/** What a save sends as the definition; null until a trigger is picked. */
export function buildDefinition(catalog: Catalog, draft: Draft): EditorDefinition | null {
  const { type, cfg, original } = draft.trigger;
  if (type === null) return null;
  if (draft.steps) {
    const d: DefinitionV2 = { version: 2, trigger: { type, config: fromForm(triggerOf(catalog, type)?.fields ?? [], cfg, original) }, steps: stepsToDef(catalog, draft.steps).steps };
    if (draft.maxAttempts.trim()) d.retry = { max_attempts: Number(draft.maxAttempts) };
    if (draft.timezone) d.timezone = draft.timezone;
    const timed = timedFromForm(draft.timed);
    if (timed) d.timed = timed;
    return d;
  }
  const d: Definition = {
    version: 1,
    trigger: { type, config: fromForm(triggerOf(catalog, type)?.fields ?? [], cfg, original) },
    actions: typedSlots(draft).map((a) => {
      const action: Definition["actions"][number] = { type: a.type, config: fromForm(actionOf(catalog, a.type)?.fields ?? [], a.cfg, a.original) };
      const timing = timingFromForm(a.timing);
      if (timing) action.timing = timing;
      return action;
    }),
  };
  if (draft.filterCode !== null) d.filter = { code: draft.filterCode };
  if (draft.transform) d.transform = { ...draft.transform, output: draft.transform.output || "output" };
  if (draft.maxAttempts.trim()) d.retry = { max_attempts: Number(draft.maxAttempts) };
  if (draft.timezone) d.timezone = draft.timezone;
  const timed = timedFromForm(draft.timed);
  if (timed) d.timed = timed;
  return d;
}

/** The name shown and saved: the typed one, or one made from the trigger and actions. */
export function shownName(catalog: Catalog, draft: Draft): string {
  if (draft.nameTouched) return draft.name;
  const trigger = triggerOf(catalog, draft.trigger.type);
  if (!trigger) return "";
  return `${trigger.label} → ${typedSlots(draft).map((a) => actionOf(catalog, a.type)?.label ?? a.type).join(", ") || "…"}`;
}

/** Everything a save sends, as one string: equal snapshots mean nothing changed. */
export function snapshotOf(catalog: Catalog, draft: Draft): string {
  return JSON.stringify({ name: shownName(catalog, draft).trim(), definition: JSON.stringify(buildDefinition(catalog, draft)) });
}
