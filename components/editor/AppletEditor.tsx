"use client";
import { useRouter } from "next/navigation";
import { useEffect, useMemo, useReducer, useRef, useState } from "react";
import { ingredientGroups, type IngredientGroup } from "@/lib/ui/format";
import type { Meta, MetaTrigger } from "@/lib/api/queries";
import { ActionsStep } from "./ActionsStep";
import { saveApplet, saveDraft, type FilterTestResult, type PreviewRequest } from "./api";
import { SamplePicker, builtinChoice, type SampleChoice } from "./SamplePicker";
import { useSharedSample } from "./sharedSample";
import { parseSample } from "@/lib/ui/sample";
import { actionOf, buildDefinition, type Draft, type DraftAction, type EditorDefinition, draftFromDefinition, draftReducer, shownName, snapshotOf, triggerOf, typedSlots } from "./draft";
import { openProblems, placeProblems, reportProblems, type PlacedProblems, type ReportedProblem } from "./save-problems";
import { browserTimeZone } from "./fields";
import { FilterCode } from "./FilterCode";
import { wordProblems } from "./problems";
import { missingSecretRefs, secretMissingMessage } from "@/lib/template/secret-refs";
import { literalCredentials, literalCredentialWarning, type FieldsOf } from "@/lib/applets/credentials";
import { needsRenderedPreview } from "./panels";
import { SaveSection, type SaveStatus } from "./SaveSection";
import { TimedSettings } from "./TimedSettings";
import { anchorOptions, hasTimedSettings } from "./timing";
import { TransformForm } from "./TransformForm";
import { TriggerStep } from "./TriggerStep";
import { usePreview } from "./usePreview";
import { useTimingPreview } from "./useTimingPreview";
import { useUnsavedGuard } from "./useUnsavedGuard";
import { useSaveShortcut } from "./useSaveShortcut";
import { ListenForEvent } from "./ListenForEvent";
import { AddStep } from "./steps/AddStep";
import { StepsEditor } from "./steps/StepsEditor";

export interface EditorApplet {
  id: string;
  name: string;
  /** As stored: a step list with a linear form (asLinear) opens as the simple two-step flow. */
  definition: EditorDefinition;
}

/**
 * The applet editor, for a new applet (POST) and an existing one (PUT): step 1 picks the trigger
 * and fills its form, step 2 the actions; filter code, AI transform and more actions below. Every
 * form is generated from the plug-ins' metadata (GET /api/meta). The state is a draft (./draft.ts)
 * changed only through its reducer; this component wires it to the steps, the preview and the save.
 */
export function AppletEditor({ meta, secrets, applet }: { meta: Meta; secrets: string[]; applet?: EditorApplet }) {
  const router = useRouter();
  const [draft, dispatch] = useReducer(draftReducer, applet, (stored) => draftFromDefinition(meta, stored));
  const [reported, setReported] = useState<ReportedProblem[]>([]);
  const focusFirstProblemRef = useFocusFirstProblem(reported);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<string | null>(null);
  /** The snapshot last saved, so "Saved." shows only while nothing has changed since. */
  const [savedSnapshot, setSavedSnapshot] = useState<string | null>(null);
  const [filterResult, setFilterResult] = useState<FilterTestResult | null>(null);
  const [pickerKey, setPickerKey] = useState(0);

  const trigger = triggerOf(meta, draft.trigger.type);
  // ---- the sample everything is tested against: built-in, fetched, a past event, or typed ----
  const [fetched, setFetched] = useState<Record<string, unknown>[]>([]);
  const [sampleChoice, setSampleChoice] = useSharedSample(applet && draft.trigger.type ? { appletId: applet.id, triggerType: draft.trigger.type } : null, trigger?.sample ?? {});
  // One object per sample text: the ingredient picker is worked out again only when it changes.
  const sample = useMemo(() => {
    const typed = parseSample(sampleChoice.text);
    return typed.ok ? typed.value : (trigger?.sample ?? {});
  }, [sampleChoice.text, trigger]);
  const definition = buildDefinition(meta, draft);
  const name = shownName(meta, draft);

  // ---- unsaved changes: everything a save sends, against what is stored (nothing, when new) ----
  const snapshot = snapshotOf(meta, draft);
  const [baseline, setBaseline] = useState(snapshot);
  const dirty = snapshot !== baseline;
  useUnsavedGuard(dirty);
  const status: SaveStatus = savedSnapshot !== null && savedSnapshot === snapshot ? "saved" : dirty ? "unsaved" : null;

  const worded = wordProblems(meta, draft, openProblems(meta, draft, reported));
  const problems = placeProblems(draft, worded);
  // Not refused on save, but said at the field before it: a template naming a secret that does not
  // exist, and a credential written literally (the save says the same, lib/api/warnings).
  const fieldsOfMeta: FieldsOf = (place, type) => (place === "trigger" ? triggerOf(meta, type) : actionOf(meta, type))?.fields;
  const warnings = placeProblems(draft, [
    ...missingSecretRefs(definition, secrets).map((r) => ({ path: r.path, message: secretMissingMessage(r.name) })),
    ...literalCredentials(definition, fieldsOfMeta).map(literalCredentialWarning),
  ]);

  const transformOutput = draft.transform ? draft.transform.output || "output" : null;
  const groups = useMemo(() => ingredientGroups({ trigger, sample, transformOutput, filterCode: draft.filterCode, secrets }), [trigger, sample, transformOutput, draft.filterCode, secrets]);

  // ---- preview: once asked for, or while a panel shows the rendered config (a note's path) ----
  const previewRequest: PreviewRequest | null =
    trigger && definition
      ? {
          definition,
          sample,
          vars: filterResult?.vars ?? {},
          // The model is not called in a preview; a marked stand-in shows where its answer goes.
          ai: transformOutput ? { [transformOutput]: "[AI output: not generated in preview]" } : {},
        }
      : null;
  const preview = usePreview(
    previewRequest,
    typedSlots(draft).some((slot) => needsRenderedPreview(actionOf(meta, slot.type)?.fields ?? [])),
  );

  // ---- timed actions: anchors from the sample, and when each would run for it ----
  const anchors = anchorOptions(sample);
  const timingPreview = useTimingPreview(definition, sample);
  const anyTimed = typedSlots(draft).some((slot) => slot.timing.mode === "later");

  function pickTrigger(t: MetaTrigger) {
    // Another trigger has another sample: what was rendered or tested against the old one goes.
    if (t.type !== draft.previousTrigger) {
      preview.reset();
      setFilterResult(null);
      setFetched([]);
      setSampleChoice(builtinChoice(t.sample));
    }
    dispatch({ kind: "pickTrigger", trigger: t, timeZone: browserTimeZone() });
  }

  /** A new applet saved disabled, to get its id and webhook URL before it is finished. */
  async function saveAsDraft() {
    setSaving(true);
    setSaveError(null);
    const answer = await saveDraft({ name: name.trim(), definition });
    setSaving(false);
    if (!answer.ok) {
      if ("error" in answer) return setSaveError(answer.error);
      return setReported(reportProblems(meta, draft, answer.problems));
    }
    setBaseline(snapshot);
    router.push(`/applets/${answer.id}`);
  }

  async function save() {
    setSaving(true);
    setSaveError(null);
    setSavedSnapshot(null);
    const sent = snapshot;
    const answer = await saveApplet(applet?.id, { name: name.trim(), definition });
    setSaving(false);
    if (!answer.ok) {
      if ("error" in answer) return setSaveError(answer.error);
      focusFirstProblemRef.current = true;
      setReported(reportProblems(meta, draft, answer.problems));
      return;
    }
    setReported([]);
    // What was sent is now what is stored: nothing to warn about when leaving.
    setBaseline(sent);
    if (applet) {
      setSavedSnapshot(sent);
      router.refresh();
    } else {
      router.push(`/applets/${answer.id}`);
    }
  }

  // Ctrl/Cmd+S: the same save as the button, once a trigger is picked.
  useSaveShortcut(() => void save(), Boolean(trigger) && !saving);

  return (
    <div className="flex flex-col gap-5">
      <TriggerStep meta={meta} draft={draft} dispatch={dispatch} onPick={pickTrigger} problems={problems} warnings={warnings} isNew={!applet} onFetched={(items) => {
        setFetched(items);
        // The first fetched item is what the feed really holds: test against it from now on.
        if (items[0] && sampleChoice.source === "builtin") setSampleChoice({ source: "fetched:0", text: JSON.stringify(items[0], null, 2) });
      }} onSaveDraft={() => void saveAsDraft()} />
      {trigger ? (
        <>
          <SampleSection pickerKey={pickerKey} appletId={applet?.id} trigger={trigger} fetched={fetched} sampleChoice={sampleChoice} setSampleChoice={setSampleChoice} onListened={() => setPickerKey((k) => k + 1)} />
          {draft.steps ? (
            <StepsEditor meta={meta} draft={{ ...draft, steps: draft.steps }} dispatch={dispatch} problems={problems} warnings={warnings} groups={groups} preview={preview} isNew={!applet} anchors={anchors} timingPreview={timingPreview} sample={sample} builtinSample={trigger.sample} />
          ) : (
            <ActionsStep meta={meta} trigger={trigger} draft={draft} dispatch={dispatch} problems={problems} warnings={warnings} groups={groups} preview={preview} isNew={!applet} anchors={anchors} timingPreview={timingPreview} />
          )}
          {anyTimed || hasTimedSettings(draft.timed) || problems.timed.size > 0 ? <TimedSettings timed={draft.timed} onChange={(timed) => dispatch({ kind: "setTimed", timed })} errors={problems.timed} groups={groups} anyTimed={anyTimed} warnings={timingPreview.warnings} /> : null}
          {draft.steps ? null : <OptionalSteps draft={draft} dispatch={dispatch} sample={sample} problems={problems} groups={groups} aiConfigured={meta.ai_configured} setFilterResult={setFilterResult} />}

          <SaveSection draft={draft} name={name} dispatch={dispatch} nameErrors={problems.name} problems={worded} saveError={saveError} saving={saving} status={status} isNew={!applet} onSave={() => void save()} />
        </>
      ) : null}
    </div>
  );
}

/**
 * Set by a refused save: once its problems are on screen, the first field in error gets the
 * focus (and is scrolled to), so a keyboard user lands on it. After the commit, not in the next
 * frame: React may paint the problems after that frame, and the focus then stayed on the button.
 */
function useFocusFirstProblem(reported: ReportedProblem[]) {
  const focusFirstProblemRef = useRef(false);
  useEffect(() => {
    if (!focusFirstProblemRef.current) return;
    focusFirstProblemRef.current = false;
    const first = document.querySelector<HTMLElement>('[aria-invalid="true"], [role="alert"]');
    first?.scrollIntoView({ block: "center", behavior: "smooth" });
    if (first?.matches("input, textarea, select")) first.focus({ preventScroll: true });
  }, [reported]);
  return focusFirstProblemRef;
}

/** The sample everything is tested against; a webhook applet can listen for a real event. */
function SampleSection({
  pickerKey,
  appletId,
  trigger,
  fetched,
  sampleChoice,
  setSampleChoice,
  onListened,
}: {
  pickerKey: number;
  appletId: string | undefined;
  trigger: MetaTrigger;
  fetched: Record<string, unknown>[];
  sampleChoice: SampleChoice;
  setSampleChoice: (c: SampleChoice) => void;
  /** A listened event became the sample: the picker lists the applet's events again. */
  onListened: () => void;
}) {
  return (
    <section className="card" aria-label="Sample">
      <SamplePicker key={pickerKey} appletId={appletId} builtin={trigger.sample} fetched={fetched} value={sampleChoice} onChange={setSampleChoice} />
      {appletId && trigger.type === "webhook" ? (
        <ListenForEvent
          appletId={appletId}
          onEvent={(e) => {
            setSampleChoice({ source: `event:${e.id}`, text: JSON.stringify(e.payload, null, 2) });
            // The picker lists the applet's events again, with this one among them.
            onListened();
          }}
        />
      ) : null}
    </section>
  );
}

/** Filter code, AI transform and the "add a step" menu, for the simple two-step flow. */
function OptionalSteps({
  draft,
  dispatch,
  sample,
  problems,
  groups,
  aiConfigured,
  setFilterResult,
}: {
  draft: Draft;
  dispatch: React.Dispatch<DraftAction>;
  sample: Record<string, unknown>;
  problems: PlacedProblems;
  groups: IngredientGroup[];
  aiConfigured: boolean;
  setFilterResult: (r: FilterTestResult | null) => void;
}) {
  return (
    <>
      {/* ---- optional steps ---- */}
      {draft.filterCode !== null ? (
        <FilterCode
          code={draft.filterCode}
          onChange={(code) => dispatch({ kind: "setFilterCode", code })}
          sample={sample}
          errors={problems.filter}
          onResult={setFilterResult}
          onRemove={() => {
            dispatch({ kind: "setFilterCode", code: null });
            setFilterResult(null);
          }}
        />
      ) : null}
      {draft.transform ? <TransformForm value={draft.transform} onChange={(transform) => dispatch({ kind: "setTransform", transform })} errors={problems.transform} groups={groups} aiConfigured={aiConfigured} /> : null}
      <AddStep
        onAdd={(step) => dispatch({ kind: "addStep", step, where: { parent: null, list: "steps" } })}
        names={{ action: "Add another action", ...(draft.filterCode === null ? { filter: "Add filter code" } : {}), ...(draft.transform === null ? { ai: "Add AI transform" } : {}) }}
      />
    </>
  );
}
