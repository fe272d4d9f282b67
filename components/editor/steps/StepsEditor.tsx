"use client";
import { useMemo, useRef, type Dispatch } from "react";
import type { Meta } from "@/lib/api/queries";
import type { IngredientGroup } from "@/lib/ui/format";
import type { Draft, DraftAction } from "../draft";
import type { PlacedProblems } from "../save-problems";
import { StepHeading } from "../PluginCards";
import type { AnchorOption } from "../timing";
import type { Preview } from "../usePreview";
import type { TimingPreview } from "../useTimingPreview";
import { SampleDetails } from "../ActionPreview";
import type { PreviewStepEntry } from "../api";
import { StepsContext, type StepsEnv } from "./context";
import { StepList } from "./StepList";
import { everyStep, stepPaths, type StepDraft } from "./tree";

/**
 * Step 2 of an applet that is more than trigger → actions: its step list as nested cards (if,
 * paths, for each, stop, filter code, AI steps, actions), each movable and removable, with the
 * preview's decisions marked on them.
 */
export function StepsEditor(props: {
  meta: Meta;
  draft: Draft & { steps: StepDraft[] };
  dispatch: Dispatch<DraftAction>;
  problems: PlacedProblems;
  warnings?: PlacedProblems;
  groups: IngredientGroup[];
  preview: Preview;
  isNew: boolean;
  anchors: AnchorOption[];
  timingPreview: TimingPreview;
  sample: Record<string, unknown>;
  builtinSample: Record<string, unknown>;
}) {
  const { meta, draft, dispatch, preview } = props;
  const counter = useRef(1_000_000);
  const paths = useMemo(() => stepPaths(meta, draft.steps), [meta, draft.steps]);
  const env: StepsEnv = useMemo(() => {
    const actionIndex = new Map<number, number>();
    everyStep(draft.steps)
      .filter((s) => s.kind === "action" && s.slot.type !== null)
      .forEach((s, i) => actionIndex.set(s.key, i));
    const topIndex = new Map<number, number>();
    draft.steps.filter((s) => s.kind === "action" && s.slot.type !== null).forEach((s, i) => topIndex.set(s.key, i));
    const walk = new Map<string, PreviewStepEntry[]>();
    for (const e of preview.preview?.steps ?? []) walk.set(e.path, [...(walk.get(e.path) ?? []), e]);
    // Inside a step list every earlier step's output, and a for_each's item, are ingredients too.
    const ids = everyStep(draft.steps).map((s) => s.id);
    const groups: IngredientGroup[] = [
      ...props.groups,
      ...aiGroups(draft.steps),
      ...(ids.length ? [{ label: "Steps", options: ids.map((id) => ({ value: `{{steps.${id}.output}}`, label: `steps.${id}.output` })) }] : []),
      ...(everyStep(draft.steps).some((s) => s.kind === "for_each") ? [{ label: "For each", options: [{ value: "{{item}}", label: "item" }, { value: "{{index}}", label: "index" }] }] : []),
    ];
    return {
      meta,
      dispatch,
      change: (change) => dispatch({ kind: "steps", change }),
      problems: props.problems,
      warnings: props.warnings,
      groups,
      preview,
      isNew: props.isNew,
      anchors: props.anchors,
      timingPreview: props.timingPreview,
      sample: { trigger: props.sample },
      paths,
      actionIndex,
      topIndex,
      walk,
      freshKey: () => counter.current++,
    };
  }, [meta, dispatch, draft.steps, paths, preview, props.problems, props.warnings, props.groups, props.isNew, props.anchors, props.timingPreview, props.sample]);

  return (
    <section className="card" aria-labelledby="step2">
      <StepHeading id="step2" step={2}>
        Then these steps
      </StepHeading>
      <StepsContext.Provider value={env}>
        <StepList steps={draft.steps} where={{ parent: null, list: "steps" }} />
      </StepsContext.Provider>
      <div className="mt-4 flex flex-wrap items-center gap-3 border-t border-slate-200 pt-4">
        <button type="button" className="btn-secondary" onClick={preview.run} disabled={preview.busy}>
          {preview.busy ? "Rendering…" : "Preview"}
        </button>
        <span className="text-xs text-slate-500">Renders every step against the sample picked above and marks the way each condition goes; nothing is sent.</span>
      </div>
      {preview.error ? <p className="mt-2 rounded-md bg-red-50 p-2 text-sm text-red-800 ring-1 ring-red-200">{preview.error}</p> : null}
      {props.problems.actions.length ? props.problems.actions.map((m) => <p key={m} role="alert" className="mt-2 text-xs font-medium text-red-700">{m}</p>) : null}
      {preview.preview && preview.following ? <SampleDetails sample={props.builtinSample} /> : null}
    </section>
  );
}

/** Each AI step's answer, `{{ai.<output>}}` (the simple applet's one transform is already among the groups). */
function aiGroups(steps: StepDraft[]): IngredientGroup[] {
  const outputs = everyStep(steps).flatMap((s) => (s.kind === "ai" ? [s.output || "output"] : []));
  return outputs.length ? [{ label: "AI steps", options: outputs.map((o) => ({ value: `{{ai.${o}}}`, label: `ai.${o}` })) }] : [];
}
