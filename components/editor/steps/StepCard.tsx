"use client";
import { STEP_ID } from "@/lib/definition/types";
import { ActionPicker, PickedAction } from "../ActionsStep";
import { actionOf } from "../draft";
import { Alerts } from "../PluginCards";
import type { PreviewStepEntry } from "../api";
import { useSteps } from "./context";
import { AiBody, FilterBody, ForEachBody, IfBody, PathsBody, StopBody, WhenOptions } from "./StepBodies";
import { KIND_LABEL, moveStep, removeStep, updateStep, type StepDraft } from "./tree";

const TONE: Record<StepDraft["kind"], string> = {
  action: "border-emerald-300",
  if: "border-amber-400",
  paths: "border-amber-400",
  for_each: "border-sky-400",
  stop: "border-rose-400",
  filter: "border-slate-400",
  ai: "border-violet-400",
};

/** One step: its kind, its id (editable, checked as the save checks it), up / down / remove, and its form. */
export function StepCard({ step, index, count }: { step: StepDraft; index: number; count: number }) {
  const env = useSteps();
  const { change, problems, walk, paths } = env;
  const set = (next: StepDraft) => change((steps) => updateStep(steps, step.key, () => next));
  const idProblem = STEP_ID.test(step.id) ? null : "The id must be 1-64 letters, digits or _, not starting with a digit";
  const path = paths.get(step.key);
  const entries = path ? (walk.get(path) ?? []) : [];
  const label = step.kind === "action" ? (actionOf(env.meta, step.slot.type)?.label ?? "Action") : KIND_LABEL[step.kind];
  return (
    <div className={`flex flex-col gap-3 rounded-md border-l-4 bg-white p-3 ring-1 ring-slate-200 ${TONE[step.kind]}`} data-testid={`step-${step.id}`} data-step-kind={step.kind}>
      <div className="flex flex-wrap items-center justify-between gap-2">
        <div className="flex min-w-0 flex-wrap items-center gap-2">
          <span className="text-sm font-semibold">{label}</span>
          <label className="flex items-center gap-1 text-xs text-slate-500">
            id
            <input
              aria-label={`Step id of ${step.id || "this step"}`}
              aria-invalid={idProblem ? true : undefined}
              className={`w-32 rounded border-0 px-1.5 py-0.5 font-mono text-xs ring-1 ${idProblem ? "ring-red-500" : "ring-slate-300"}`}
              value={step.id}
              onChange={(e) => set({ ...step, id: e.target.value })}
            />
          </label>
        </div>
        <div className="flex items-center gap-1">
          <IconButton label={`Move ${step.id} up`} disabled={index === 0} onClick={() => change((s) => moveStep(s, step.key, -1))}>
            ↑
          </IconButton>
          <IconButton label={`Move ${step.id} down`} disabled={index === count - 1} onClick={() => change((s) => moveStep(s, step.key, 1))}>
            ↓
          </IconButton>
          <IconButton label={`Remove ${step.id}`} onClick={() => change((s) => removeStep(s, step.key))}>
            ✕
          </IconButton>
        </div>
      </div>
      {idProblem ? <Alerts messages={[idProblem]} /> : null}
      <Alerts messages={problems.steps.get(step.key) ?? []} />
      <PreviewMark step={step} entries={entries} />
      <StepBody step={step} set={set} />
    </div>
  );
}

function IconButton({ label, onClick, disabled, children }: { label: string; onClick: () => void; disabled?: boolean; children: React.ReactNode }) {
  return (
    <button type="button" aria-label={label} title={label} disabled={disabled} onClick={onClick} className="h-7 w-7 rounded text-sm text-slate-600 ring-1 ring-slate-300 hover:bg-slate-50 disabled:opacity-40">
      {children}
    </button>
  );
}

/** What the preview says of this step: the way it goes and why, skipped, or not reached. */
function PreviewMark({ step, entries }: { step: StepDraft; entries: PreviewStepEntry[] }) {
  const { preview } = useSteps();
  if (!preview.preview || preview.preview.steps.length === 0) return null;
  const first = entries.find((e) => !e.iteration) ?? entries[0];
  if (!first) {
    return (
      <p className="text-xs text-slate-500" data-testid={`preview-mark-${step.id}`}>
        Preview: not reached with this sample
      </p>
    );
  }
  const tone = first.status === "skipped" || first.status === "not_run" ? "bg-slate-100 text-slate-700" : first.status === "failed" ? "bg-red-50 text-red-800" : "bg-emerald-50 text-emerald-900";
  const head = first.decision && (step.kind === "if" || step.kind === "paths") ? `→ ${first.decision === "none" ? "no path" : first.decision}` : first.status === "run" ? "runs" : first.status === "stop" ? "stops the run" : first.status === "not_run" ? "not run in preview" : first.status;
  return (
    <p className={`rounded px-2 py-1 text-xs ${tone}`} data-testid={`preview-mark-${step.id}`}>
      <span className="font-semibold">Preview: {head}</span>
      {first.why ? <span className="break-words"> · {first.why}</span> : null}
      {entries.length > 1 ? <span> · {entries.length} times (for each item)</span> : null}
    </p>
  );
}

function StepBody({ step, set }: { step: StepDraft; set: (s: StepDraft) => void }) {
  const env = useSteps();
  switch (step.kind) {
    case "action": {
      const index = env.actionIndex.get(step.key) ?? -1;
      return <ActionBody step={step} set={set} index={index} />;
    }
    case "filter":
      return <FilterBody step={step} set={set} />;
    case "ai":
      return <AiBody step={step} set={set} />;
    case "if":
      return <IfBody step={step} set={set} />;
    case "paths":
      return <PathsBody step={step} set={set} />;
    case "for_each":
      return <ForEachBody step={step} set={set} />;
    case "stop":
      return <StopBody step={step} set={set} />;
  }
}

function ActionBody({ step, set, index }: { step: Extract<StepDraft, { kind: "action" }>; set: (s: StepDraft) => void; index: number }) {
  const env = useSteps();
  const { meta, dispatch } = env;
  const slotIndex = index >= 0 ? index : 0;
  return (
    <>
      {step.slot.type === null ? (
        <ActionPicker meta={meta} slot={step.slot} slotIndex={slotIndex} removable={false} dispatch={dispatch} />
      ) : (
        <PickedAction
          meta={meta}
          slot={{ ...step.slot, type: step.slot.type }}
          slotIndex={slotIndex}
          defIndex={index}
          removable={false}
          dispatch={dispatch}
          problems={env.problems}
          warnings={env.warnings}
          groups={env.groups}
          preview={env.preview}
          isNew={env.isNew}
          anchors={env.anchors}
          timingPreview={env.timingPreview}
          timingIndex={env.topIndex.get(step.key) ?? null}
        />
      )}
      <WhenOptions step={step} set={set} />
    </>
  );
}
