"use client";
import type { Dispatch } from "react";
import { PluginIcon } from "@/components/PluginIcon";
import { pretty, type IngredientGroup } from "@/lib/ui/format";
import type { Meta, MetaAction, MetaTrigger } from "@/lib/api/queries";
import { ActionPreview, SampleDetails } from "./ActionPreview";
import { ConfigForm } from "./ConfigForm";
import { actionOf, isPicked, typedSlots, type ActionSlot, type PickedSlot, type Draft, type DraftAction } from "./draft";
import { type PlacedProblems } from "./save-problems";
import { FieldPanels } from "./panels";
import { Alerts, PluginCards, StepHeading } from "./PluginCards";
import type { Preview } from "./usePreview";
import { TimingControl } from "./TimingControl";
import type { AnchorOption } from "./timing";
import type { TimingPreview } from "./useTimingPreview";

const NO_ERRORS = new Map<string, string[]>();

/** Step 2, "Then do that": one slot per action, and "Preview" for them all. */
export function ActionsStep({ meta, trigger, draft, dispatch, problems, warnings, groups, preview, isNew, anchors, timingPreview }: {
  meta: Meta;
  trigger: MetaTrigger;
  draft: Draft;
  dispatch: Dispatch<DraftAction>;
  problems: PlacedProblems;
  /** What a save would not refuse but a run would trip on (a secret that does not exist). */
  warnings?: PlacedProblems;
  groups: IngredientGroup[];
  preview: Preview;
  isNew: boolean;
  /** The sample's time-looking values, for the timing's anchor. */
  anchors: AnchorOption[];
  timingPreview: TimingPreview;
}) {
  const typed = typedSlots(draft);
  const removable = draft.actions.length > 1;
  return (
    <section className="card" aria-labelledby="step2">
      <StepHeading id="step2" step={2}>
        Then do that
      </StepHeading>
      <div className="flex flex-col gap-5">
        {draft.actions.map((slot, slotIndex) => (
          <div key={slot.key} className={slotIndex > 0 ? "border-t border-slate-200 pt-5" : ""} data-testid={`action-slot-${slotIndex}`}>
            {!isPicked(slot) ? (
              <ActionPicker meta={meta} slot={slot} slotIndex={slotIndex} removable={removable} dispatch={dispatch} />
            ) : (
              <PickedAction
                meta={meta}
                slot={slot}
                slotIndex={slotIndex}
                // The slot's place among the definition's actions: slots still being picked are not counted.
                defIndex={typed.indexOf(slot)}
                removable={removable}
                dispatch={dispatch}
                problems={problems}
                warnings={warnings}
                groups={groups}
                preview={preview}
                isNew={isNew}
                anchors={anchors}
                timingPreview={timingPreview}
              />
            )}
          </div>
        ))}
        <Alerts messages={problems.actions} />
        <div className="flex flex-wrap items-center gap-3 border-t border-slate-200 pt-4">
          <button type="button" className="btn-secondary" onClick={preview.run} disabled={!typed.length || preview.busy}>
            {preview.busy ? "Rendering…" : "Preview"}
          </button>
          <span className="text-xs text-slate-500">Renders every field against the sample picked above; nothing is sent.</span>
        </div>
        {preview.error ? <p className="rounded-md bg-red-50 p-2 text-sm text-red-800 ring-1 ring-red-200">{preview.error}</p> : null}
        {preview.preview && preview.following ? <SampleDetails sample={trigger.sample} /> : null}
      </div>
    </section>
  );
}

export function ActionPicker({ meta, slot, slotIndex, removable, dispatch }: { meta: Meta; slot: ActionSlot; slotIndex: number; removable: boolean; dispatch: Dispatch<DraftAction> }) {
  const previous = actionOf(meta, slot.previousType);
  const pick = (action: MetaAction) => dispatch({ kind: "pickAction", key: slot.key, action });
  const unavailable = meta.actions.filter((a) => !a.available);
  return (
    <>
      <div className="mb-2 flex flex-wrap items-center justify-between gap-2">
        <p className="text-sm font-medium text-slate-700">Action {slotIndex + 1}: pick what to do</p>
        <div className="flex items-center gap-3">
          {previous ? (
            <button type="button" className="btn-secondary" onClick={() => pick(previous)}>
              Keep {previous.label}
            </button>
          ) : null}
          {removable ? (
            <button type="button" className="text-sm text-slate-500 hover:text-red-700" onClick={() => dispatch({ kind: "removeAction", key: slot.key })}>
              Remove
            </button>
          ) : null}
        </div>
      </div>
      <PluginCards kind="action" plugins={meta.actions.filter((a) => a.available)} onPick={pick} />
      {unavailable.length ? <p className="help mt-2">Not configured on this server: {unavailable.map((a) => a.label).join(", ")} (see Settings).</p> : null}
    </>
  );
}

export function PickedAction({ meta, slot, slotIndex, defIndex, removable, dispatch, problems, warnings, groups, preview, isNew, anchors, timingPreview, timingIndex = defIndex }: {
  meta: Meta;
  slot: PickedSlot;
  slotIndex: number;
  defIndex: number;
  removable: boolean;
  dispatch: Dispatch<DraftAction>;
  problems: PlacedProblems;
  /** What a save would not refuse but a run would trip on (a secret that does not exist). */
  warnings?: PlacedProblems;
  groups: IngredientGroup[];
  preview: Preview;
  isNew: boolean;
  anchors: AnchorOption[];
  timingPreview: TimingPreview;
  /** Its place among the top-level actions, which alone may carry a timing; null: no timing (a nested step). */
  timingIndex?: number | null;
}) {
  const action = actionOf(meta, slot.type);
  const placed = problems.slots.get(slot.key);
  const rendered = preview.preview?.actions.find((p) => p.index === defIndex);
  return (
    <div className="flex flex-col gap-4">
      <div className="flex flex-wrap items-start justify-between gap-3 rounded-md bg-emerald-50/60 p-3 ring-1 ring-emerald-100">
        <div className="flex min-w-0 items-start gap-3">
          <PluginIcon kind="action" type={slot.type} label={action?.label} />
          <div>
            <p className="font-medium">
              Action {slotIndex + 1}: {action?.label ?? slot.type}
            </p>
            <p className="text-xs text-slate-600">{action?.description ?? "This install has no such action type."}</p>
          </div>
        </div>
        <div className="flex gap-2">
          <button type="button" className="btn-secondary" onClick={() => dispatch({ kind: "changeAction", key: slot.key })}>
            Change
          </button>
          {removable ? (
            <button type="button" className="btn-danger" onClick={() => dispatch({ kind: "removeAction", key: slot.key })}>
              Remove
            </button>
          ) : null}
        </div>
      </div>
      {action ? (
        <ConfigForm idPrefix={`action${slotIndex}`} fields={action.fields} cfg={slot.cfg} onChange={(cfg) => dispatch({ kind: "setActionConfig", key: slot.key, cfg })} errors={placed?.fields ?? NO_ERRORS} warnings={warnings?.slots.get(slot.key)?.fields} groups={groups} />
      ) : (
        <pre className="pre">{pretty(slot.original)}</pre>
      )}
      <Alerts messages={placed?.own ?? []} />
      {timingIndex === null ? null : <TimingControl
        idPrefix={`action${slotIndex}`}
        timing={slot.timing}
        onChange={(timing) => dispatch({ kind: "setTiming", key: slot.key, timing })}
        errors={placed?.timing ?? NO_ERRORS}
        anchors={anchors}
        preview={timingPreview.items?.find((p) => p.actionIndex === timingIndex)}
        previewBusy={timingPreview.busy}
        previewError={timingPreview.error}
      />}
      <FieldPanels fields={action?.fields ?? []} meta={meta} cfg={slot.cfg} rendered={rendered?.rendered} isNew={isNew} />
      {rendered && action ? <ActionPreview action={action} preview={rendered} templates={preview.preview?.templates[defIndex] ?? {}} index={defIndex} /> : null}
    </div>
  );
}
