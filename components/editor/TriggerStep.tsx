"use client";
import type { Dispatch } from "react";
import { PluginIcon } from "@/components/PluginIcon";
import type { Meta, MetaTrigger } from "@/lib/api/queries";
import { ConfigForm } from "./ConfigForm";
import { triggerOf, type Draft, type DraftAction } from "./draft";
import { type PlacedProblems } from "./save-problems";
import { FetchNow } from "./FetchNow";
import { fromForm } from "./fields";
import { FieldPanels } from "./panels";
import { Alerts, PluginCards, StepHeading } from "./PluginCards";

/** Step 1, "When this happens": the trigger cards, or the picked trigger's card and form. */
export function TriggerStep({ meta, draft, dispatch, onPick, problems, warnings, isNew, onFetched, onSaveDraft }: { meta: Meta; draft: Draft; dispatch: Dispatch<DraftAction>; onPick: (t: MetaTrigger) => void; problems: PlacedProblems; warnings?: PlacedProblems; isNew: boolean; onFetched?: (items: Record<string, unknown>[]) => void; onSaveDraft?: () => void }) {
  const trigger = triggerOf(meta, draft.trigger.type);
  return (
    <section className="card" aria-labelledby="step1">
      <StepHeading id="step1" step={1}>
        When this happens
      </StepHeading>
      {trigger ? <PickedTrigger meta={meta} trigger={trigger} draft={draft} dispatch={dispatch} problems={problems} warnings={warnings} isNew={isNew} onFetched={onFetched} onSaveDraft={onSaveDraft} /> : <TriggerPicker meta={meta} draft={draft} onPick={onPick} problems={problems} />}
    </section>
  );
}

function TriggerPicker({ meta, draft, onPick, problems }: { meta: Meta; draft: Draft; onPick: (t: MetaTrigger) => void; problems: PlacedProblems }) {
  const previous = triggerOf(meta, draft.previousTrigger);
  return (
    <>
      {draft.trigger.type ? <p className="mb-3 text-sm text-red-700">This applet uses the trigger &quot;{draft.trigger.type}&quot;, which this install does not have. Pick another.</p> : null}
      {previous ? (
        <div className="mb-3 flex flex-wrap items-center justify-between gap-2 text-sm text-slate-600">
          <p>Pick another trigger. Its settings are kept if you come back to {previous.label}.</p>
          <button type="button" className="btn-secondary" onClick={() => onPick(previous)}>
            Keep {previous.label}
          </button>
        </div>
      ) : null}
      <PluginCards kind="trigger" plugins={meta.triggers} onPick={onPick} />
      <Alerts messages={problems.triggerType} className="mt-2 text-xs font-medium text-red-700" />
    </>
  );
}

function PickedTrigger({ meta, trigger, draft, dispatch, problems, warnings, isNew, onFetched, onSaveDraft }: { meta: Meta; trigger: MetaTrigger; draft: Draft; dispatch: Dispatch<DraftAction>; problems: PlacedProblems; warnings?: PlacedProblems; isNew: boolean; onFetched?: (items: Record<string, unknown>[]) => void; onSaveDraft?: () => void }) {
  const { cfg, original } = draft.trigger;
  return (
    <div className="flex flex-col gap-4">
      <div className="flex items-start justify-between gap-3 rounded-md bg-indigo-50/60 p-3 ring-1 ring-indigo-100">
        <div className="flex min-w-0 items-start gap-3">
          <PluginIcon kind="trigger" type={trigger.type} label={trigger.label} />
          <div>
            <p className="font-medium" data-testid="selected-trigger">
              {trigger.label}
            </p>
            <p className="text-xs text-slate-600">{trigger.description}</p>
          </div>
        </div>
        <button type="button" className="btn-secondary shrink-0" onClick={() => dispatch({ kind: "changeTrigger" })}>
          Change
        </button>
      </div>
      <ConfigForm idPrefix="trigger" fields={trigger.fields} cfg={cfg} onChange={(next) => dispatch({ kind: "setTriggerConfig", cfg: next })} errors={problems.trigger} warnings={warnings?.trigger} groups={null} />
      <FieldPanels fields={trigger.fields} meta={meta} cfg={cfg} rendered={undefined} isNew={isNew} onSaveDraft={onSaveDraft} />
      {trigger.can_fetch ? <FetchNow type={trigger.type} label={trigger.fetch_label} fields={trigger.fields} config={fromForm(trigger.fields, cfg, original)} onItems={onFetched} /> : null}
    </div>
  );
}
