"use client";
import { useRouter } from "next/navigation";
import { useEffect, useMemo, useRef, useState } from "react";
import { PluginIcon } from "@/components/PluginIcon";
import { sanitizeFilename } from "@/lib/files/sanitize";
import { ingredientGroups, pretty, problemsUnder, templateSegments, type IngredientGroup } from "@/lib/ui/format";
import type { DefinitionJson, Meta, MetaAction, MetaTrigger, Problem } from "@/lib/ui/types";
import { ConfigForm } from "./ConfigForm";
import { FilterCode, type FilterTestResult } from "./FilterCode";
import { TemplateInput } from "./TemplateInput";
import { TimezoneSelect } from "./TimezoneSelect";
import { EmailAddressHint, FetchNow } from "./TriggerExtras";
import { browserTimeZone, defaultsFor, fromForm, toForm, type FormConfig } from "./fields";

interface ActionSlot {
  key: number;
  type: string | null;
  cfg: FormConfig;
  /** The stored config, so keys the form does not know survive an edit. */
  original: Record<string, unknown>;
  /** What each type held when "Change" left it: picking that type again brings it back. */
  stash?: Record<string, Stashed>;
  /** The type "Change" left, offered as "Keep …" while picking. */
  previousType?: string;
}

interface Stashed {
  cfg: FormConfig;
  original: Record<string, unknown>;
}

/** A save's problem and what its field held when the server reported it. */
interface ShownProblem extends Problem {
  at: string;
}

const LEAVE_WARNING = "This applet has unsaved changes. Leave without saving them?";

interface Transform {
  model: string;
  prompt: string;
  output: string;
  json: boolean;
}

interface PreviewAction {
  index: number;
  type: string;
  rendered: Record<string, unknown>;
  warnings: string[];
  unresolved: string[];
}

interface PreviewState {
  actions: PreviewAction[];
  /** The templates that were rendered, to highlight unresolved expressions in them. */
  templates: Record<string, unknown>[];
  problems: Problem[];
}

export interface EditorApplet {
  id: string;
  name: string;
  definition: DefinitionJson;
}

/**
 * The applet editor, for a new applet (POST) and an existing one (PUT): step 1 picks the trigger
 * and fills its form, step 2 the actions; filter code, AI transform and more actions below. Every
 * form is generated from the plug-ins' metadata (GET /api/meta).
 */
export function AppletEditor({ meta, secrets, applet }: { meta: Meta; secrets: string[]; applet?: EditorApplet }) {
  const router = useRouter();
  const def = applet?.definition;
  const triggerOf = (type: string | null | undefined): MetaTrigger | undefined => meta.triggers.find((t) => t.type === type);
  const actionOf = (type: string | null | undefined): MetaAction | undefined => meta.actions.find((a) => a.type === type);

  const [triggerType, setTriggerType] = useState<string | null>(def?.trigger.type ?? null);
  const [triggerCfg, setTriggerCfg] = useState<FormConfig>(() => (def ? toForm(triggerOf(def.trigger.type)?.fields ?? [], def.trigger.config) : {}));
  const [triggerOriginal, setTriggerOriginal] = useState<Record<string, unknown>>(def?.trigger.config ?? {});
  const nextKey = useRef(def?.actions.length ?? 1);
  const [actions, setActions] = useState<ActionSlot[]>(() =>
    def ? def.actions.map((a, i) => ({ key: i, type: a.type, cfg: toForm(actionOf(a.type)?.fields ?? [], a.config), original: a.config })) : [{ key: 0, type: null, cfg: {}, original: {} }],
  );
  const [filterCode, setFilterCode] = useState<string | null>(def?.filter?.code ?? null);
  const [transform, setTransform] = useState<Transform | null>(def?.transform ?? null);
  const [maxAttempts, setMaxAttempts] = useState(def?.retry ? String(def.retry.max_attempts) : "");
  const [timezone, setTimezone] = useState(def?.timezone ?? "");
  const [name, setName] = useState(applet?.name ?? "");
  const [nameTouched, setNameTouched] = useState(Boolean(applet));
  const [reported, setReported] = useState<ShownProblem[]>([]);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<string | null>(null);
  /** The snapshot last saved, so "Saved." shows only while nothing has changed since. */
  const [savedSnapshot, setSavedSnapshot] = useState<string | null>(null);
  /** What "Change" on the trigger left behind, by type; and the type itself, for "Keep …". */
  const triggerStash = useRef<Record<string, Stashed>>({});
  const [previousTrigger, setPreviousTrigger] = useState<string | null>(null);
  const [preview, setPreview] = useState<PreviewState | null>(null);
  const [previewBusy, setPreviewBusy] = useState(false);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const [filterResult, setFilterResult] = useState<FilterTestResult | null>(null);

  const trigger = triggerOf(triggerType);
  const typedSlots = actions.filter((a) => a.type !== null);
  const suggestedName = trigger ? `${trigger.label} → ${typedSlots.map((a) => actionOf(a.type)?.label ?? a.type).join(", ") || "…"}` : "";
  const shownName = nameTouched ? name : suggestedName;

  const groups: IngredientGroup[] = useMemo(
    () => ingredientGroups({ trigger, transformOutput: transform ? transform.output || "output" : null, filterCode, secrets }),
    [trigger, transform, filterCode, secrets],
  );

  function buildDefinition(): DefinitionJson {
    const d: DefinitionJson = {
      version: 1,
      trigger: { type: triggerType ?? "", config: fromForm(trigger?.fields ?? [], triggerCfg, triggerOriginal) },
      actions: typedSlots.map((a) => ({ type: a.type!, config: fromForm(actionOf(a.type)?.fields ?? [], a.cfg, a.original) })),
    };
    if (filterCode !== null) d.filter = { code: filterCode };
    if (transform) d.transform = { ...transform, output: transform.output || "output" };
    if (maxAttempts.trim()) d.retry = { max_attempts: Number(maxAttempts) };
    if (timezone) d.timezone = timezone;
    return d;
  }
  const definitionJson = JSON.stringify(triggerType ? buildDefinition() : null);

  // ---- unsaved changes -------------------------------------------------------------------------
  // Everything a save sends; the first render's value is what is stored (or nothing, when new).
  const snapshot = JSON.stringify({ name: shownName.trim(), definition: definitionJson });
  const baseline = useRef<string | null>(null);
  if (baseline.current === null) baseline.current = snapshot;
  const dirty = snapshot !== baseline.current;

  useEffect(() => {
    if (!dirty) return;
    const onBeforeUnload = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      // Older browsers show the prompt only when returnValue is set.
      e.returnValue = "";
    };
    // In-app links navigate without unloading the page: ask before Next's router sees the click.
    // Capture phase on document runs before React's handlers; stopping the event there keeps the
    // Link from navigating.
    const onClick = (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const a = (e.target as Element | null)?.closest?.("a[href]");
      if (!(a instanceof HTMLAnchorElement) || a.target === "_blank" || a.hasAttribute("download")) return;
      const to = new URL(a.href, location.href);
      if (to.origin !== location.origin || (to.pathname === location.pathname && to.search === location.search)) return;
      if (!window.confirm(LEAVE_WARNING)) {
        e.preventDefault();
        e.stopPropagation();
      }
    };
    window.addEventListener("beforeunload", onBeforeUnload);
    document.addEventListener("click", onClick, true);
    return () => {
      window.removeEventListener("beforeunload", onBeforeUnload);
      document.removeEventListener("click", onClick, true);
    };
  }, [dirty]);

  // ---- problems from the last save ---------------------------------------------------------------
  // A problem stays shown while the part of the applet it is about still holds what was saved;
  // editing that field (or adding the missing action) clears it without another save.
  function stateFor(path: string): string {
    const action = /^definition\.actions\.(\d+)(?:\.config\.([^.]+))?/.exec(path);
    if (action) {
      const slot = typedSlots[Number(action[1])];
      return JSON.stringify(slot ? [slot.type, action[2] ? slot.cfg[action[2]] : slot.cfg] : null);
    }
    if (path === "definition.actions") return JSON.stringify(typedSlots.map((a) => a.type));
    const trig = /^definition\.trigger(?:\.config\.([^.]+))?/.exec(path);
    if (trig) return JSON.stringify([triggerType, trig[1] ? triggerCfg[trig[1]] : triggerCfg]);
    const tf = /^definition\.transform(?:\.([^.]+))?/.exec(path);
    if (tf) return JSON.stringify(tf[1] && transform ? transform[tf[1] as keyof Transform] : transform);
    if (path.startsWith("definition.filter")) return JSON.stringify(filterCode);
    if (path.startsWith("definition.retry")) return maxAttempts;
    if (path.startsWith("definition.timezone")) return timezone;
    if (path === "name") return shownName.trim();
    return snapshot;
  }
  const problems: Problem[] = reported.filter((p) => stateFor(p.path) === p.at);

  // ---- preview ---------------------------------------------------------------------------------
  const hasNote = typedSlots.some((a) => a.type === "note");
  const [previewWanted, setPreviewWanted] = useState(false);
  const previewSeq = useRef(0);

  async function runPreview() {
    if (!trigger) return;
    const seq = ++previewSeq.current;
    const definition = buildDefinition();
    setPreviewBusy(true);
    const res = await fetch("/api/applets/preview", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        definition,
        sample: trigger.sample,
        vars: filterResult?.vars ?? {},
        // The model is not called in a preview; a marked stand-in shows where its answer goes.
        ai: transform ? { [transform.output || "output"]: "[AI output: not generated in preview]" } : {},
      }),
    }).catch(() => null);
    if (seq !== previewSeq.current) return;
    setPreviewBusy(false);
    const body = res ? ((await res.json().catch(() => null)) as { actions?: PreviewAction[]; problems?: Problem[]; error?: string } | null) : null;
    if (!res?.ok || !body?.actions) {
      setPreviewError(body?.error ?? (res ? `preview failed (${res.status})` : "network error"));
      return;
    }
    setPreviewError(null);
    setPreview({ actions: body.actions, templates: definition.actions.map((a) => a.config), problems: body.problems ?? [] });
  }

  // Once asked for (or when a note action needs its path shown), the preview follows every edit.
  useEffect(() => {
    if (!(previewWanted || hasNote) || !triggerType) return;
    const t = setTimeout(() => void runPreview(), 400);
    return () => clearTimeout(t);
    // runPreview reads the state that definitionJson serializes, so that string is the dependency.
  }, [definitionJson, previewWanted, hasNote, filterResult]);

  // ---- save ------------------------------------------------------------------------------------
  async function save() {
    setSaving(true);
    setSaveError(null);
    setSavedSnapshot(null);
    const sent = snapshot;
    const body = { name: shownName.trim(), definition: buildDefinition() };
    const res = await fetch(applet ? `/api/applets/${applet.id}` : "/api/applets", {
      method: applet ? "PUT" : "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }).catch(() => null);
    setSaving(false);
    if (!res) return setSaveError("network error: nothing was saved");
    const answer = (await res.json().catch(() => ({}))) as { applet?: { id: string }; problems?: Problem[]; error?: string };
    if (res.status === 400) {
      const list = answer.problems?.length ? answer.problems : [{ path: "", message: answer.error ?? "invalid applet" }];
      setReported(list.map((p) => ({ ...p, at: stateFor(p.path) })));
      requestAnimationFrame(() => document.querySelector('[aria-invalid="true"], [role="alert"]')?.scrollIntoView({ block: "center", behavior: "smooth" }));
      return;
    }
    if (!res.ok || !answer.applet) return setSaveError(answer.error ?? `save failed (${res.status})`);
    setReported([]);
    // What was sent is now what is stored: nothing to warn about when leaving.
    baseline.current = sent;
    if (applet) {
      setSavedSnapshot(sent);
      router.refresh();
    } else {
      router.push(`/applets/${answer.applet.id}`);
    }
  }

  // ---- handlers --------------------------------------------------------------------------------
  function pickTrigger(t: MetaTrigger) {
    const kept = triggerStash.current[t.type];
    if (kept) {
      // Back to a type left with "Change": its settings come back as they were.
      setTriggerCfg(kept.cfg);
      setTriggerOriginal(kept.original);
    } else {
      const cfg = defaultsFor(t.fields);
      // A schedule starts in the reader's own zone.
      if (t.fields.some((f) => f.name === "timezone")) cfg.timezone = browserTimeZone();
      setTriggerCfg(cfg);
      setTriggerOriginal({});
    }
    setTriggerType(t.type);
    setPreviousTrigger(null);
    if (t.type !== previousTrigger) {
      setPreview(null);
      setFilterResult(null);
    }
  }
  /** "Change" keeps what the trigger held, so picking the same type again loses nothing. */
  function changeTrigger() {
    if (!triggerType) return;
    triggerStash.current[triggerType] = { cfg: triggerCfg, original: triggerOriginal };
    setPreviousTrigger(triggerType);
    setTriggerType(null);
  }
  const updateSlot = (key: number, patch: Partial<ActionSlot>) => setActions((xs) => xs.map((a) => (a.key === key ? { ...a, ...patch } : a)));
  function changeAction(slot: ActionSlot) {
    if (!slot.type) return;
    updateSlot(slot.key, { type: null, previousType: slot.type, stash: { ...slot.stash, [slot.type]: { cfg: slot.cfg, original: slot.original } } });
  }
  function pickAction(slot: ActionSlot, a: MetaAction) {
    const kept = slot.stash?.[a.type];
    updateSlot(slot.key, { type: a.type, cfg: kept?.cfg ?? defaultsFor(a.fields), original: kept?.original ?? {}, previousType: undefined });
  }
  function addAction() {
    setActions((xs) => [...xs, { key: nextKey.current++, type: null, cfg: {}, original: {} }]);
  }

  const nameErrors = problems.filter((p) => p.path === "name").map((p) => p.message);
  const triggerErrors = problemsUnder(problems, "definition.trigger.config");
  const triggerTypeErrors = problems.filter((p) => p.path === "definition.trigger" || p.path === "definition.trigger.type").map((p) => p.message);
  const filterErrors = problems.filter((p) => p.path.startsWith("definition.filter")).map((p) => p.message);
  const transformErrors = problemsUnder(problems, "definition.transform");
  const actionsErrors = problems.filter((p) => p.path === "definition.actions").map((p) => p.message);
  const builtTriggerConfig = trigger ? fromForm(trigger.fields, triggerCfg, triggerOriginal) : {};

  return (
    <div className="flex flex-col gap-5">
      {/* ---- step 1 ---- */}
      <section className="card" aria-labelledby="step1">
        <h2 id="step1" className="mb-3 text-base font-semibold">
          <span className="mr-2 inline-flex h-6 w-6 items-center justify-center rounded-full bg-indigo-600 text-xs text-white">1</span>
          When this happens
        </h2>
        {!trigger ? (
          <>
            {triggerType ? <p className="mb-3 text-sm text-red-700">This applet uses the trigger &quot;{triggerType}&quot;, which this install does not have. Pick another.</p> : null}
            {previousTrigger && triggerOf(previousTrigger) ? (
              <div className="mb-3 flex flex-wrap items-center justify-between gap-2 text-sm text-slate-600">
                <p>Pick another trigger. Its settings are kept if you come back to {triggerOf(previousTrigger)!.label}.</p>
                <button type="button" className="btn-secondary" onClick={() => pickTrigger(triggerOf(previousTrigger)!)}>
                  Keep {triggerOf(previousTrigger)!.label}
                </button>
              </div>
            ) : null}
            <div className="grid gap-3 sm:grid-cols-2 lg:grid-cols-3">
              {meta.triggers.map((t) => (
                <button key={t.type} type="button" data-testid={`trigger-card-${t.type}`} onClick={() => pickTrigger(t)} className="flex items-start gap-3 rounded-lg p-3 text-left ring-1 ring-slate-200 hover:bg-indigo-50 hover:ring-indigo-300">
                  <PluginIcon kind="trigger" type={t.type} label={t.label} />
                  <span>
                    <span className="block font-medium">{t.label}</span>
                    <span className="mt-0.5 block text-xs text-slate-600">{t.description}</span>
                  </span>
                </button>
              ))}
            </div>
            {triggerTypeErrors.map((e) => (
              <p key={e} className="mt-2 text-xs font-medium text-red-700" role="alert">
                {e}
              </p>
            ))}
          </>
        ) : (
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
              <button type="button" className="btn-secondary shrink-0" onClick={changeTrigger}>
                Change
              </button>
            </div>
            <ConfigForm idPrefix="trigger" fields={trigger.fields} cfg={triggerCfg} onChange={setTriggerCfg} errors={triggerErrors} groups={null} />
            {trigger.type === "webhook" && !applet ? <p className="text-sm text-slate-600">The webhook URL is shown on the applet&apos;s page after you save.</p> : null}
            {trigger.type === "email" ? <EmailAddressHint meta={meta} cfg={triggerCfg} /> : null}
            {trigger.can_fetch ? <FetchNow type={trigger.type} config={builtTriggerConfig} /> : null}
          </div>
        )}
      </section>

      {/* ---- step 2 ---- */}
      {trigger ? (
        <section className="card" aria-labelledby="step2">
          <h2 id="step2" className="mb-3 text-base font-semibold">
            <span className="mr-2 inline-flex h-6 w-6 items-center justify-center rounded-full bg-indigo-600 text-xs text-white">2</span>
            Then do that
          </h2>
          <div className="flex flex-col gap-5">
            {actions.map((slot, slotIndex) => {
              const defIndex = typedSlots.indexOf(slot);
              const am = actionOf(slot.type);
              const pv = preview && defIndex >= 0 ? preview.actions.find((p) => p.index === defIndex) : undefined;
              return (
                <div key={slot.key} className={slotIndex > 0 ? "border-t border-slate-200 pt-5" : ""} data-testid={`action-slot-${slotIndex}`}>
                  {!slot.type ? (
                    <>
                      <div className="mb-2 flex flex-wrap items-center justify-between gap-2">
                        <p className="text-sm font-medium text-slate-700">Action {slotIndex + 1}: pick what to do</p>
                        <div className="flex items-center gap-3">
                          {slot.previousType && actionOf(slot.previousType) ? (
                            <button type="button" className="btn-secondary" onClick={() => pickAction(slot, actionOf(slot.previousType)!)}>
                              Keep {actionOf(slot.previousType)!.label}
                            </button>
                          ) : null}
                          {actions.length > 1 ? (
                            <button type="button" className="text-sm text-slate-500 hover:text-red-700" onClick={() => setActions((xs) => xs.filter((a) => a.key !== slot.key))}>
                              Remove
                            </button>
                          ) : null}
                        </div>
                      </div>
                      <div className="grid gap-3 sm:grid-cols-2 lg:grid-cols-3">
                        {meta.actions
                          .filter((a) => a.available)
                          .map((a) => (
                            <button key={a.type} type="button" data-testid={`action-card-${a.type}`} onClick={() => pickAction(slot, a)} className="flex items-start gap-3 rounded-lg p-3 text-left ring-1 ring-slate-200 hover:bg-emerald-50 hover:ring-emerald-300">
                              <PluginIcon kind="action" type={a.type} label={a.label} />
                              <span>
                                <span className="block font-medium">{a.label}</span>
                                <span className="mt-0.5 block text-xs text-slate-600">{a.description}</span>
                              </span>
                            </button>
                          ))}
                      </div>
                      {meta.actions.some((a) => !a.available) ? (
                        <p className="help mt-2">Not configured on this server: {meta.actions.filter((a) => !a.available).map((a) => a.label).join(", ")} (see Settings).</p>
                      ) : null}
                    </>
                  ) : (
                    <div className="flex flex-col gap-4">
                      <div className="flex flex-wrap items-start justify-between gap-3 rounded-md bg-emerald-50/60 p-3 ring-1 ring-emerald-100">
                        <div className="flex min-w-0 items-start gap-3">
                          <PluginIcon kind="action" type={slot.type} label={am?.label} />
                          <div>
                            <p className="font-medium">
                              Action {slotIndex + 1}: {am?.label ?? slot.type}
                            </p>
                            <p className="text-xs text-slate-600">{am?.description ?? "This install has no such action type."}</p>
                          </div>
                        </div>
                        <div className="flex gap-2">
                          <button type="button" className="btn-secondary" onClick={() => changeAction(slot)}>
                            Change
                          </button>
                          {actions.length > 1 ? (
                            <button type="button" className="btn-danger" onClick={() => setActions((xs) => xs.filter((a) => a.key !== slot.key))}>
                              Remove
                            </button>
                          ) : null}
                        </div>
                      </div>
                      {am ? (
                        <ConfigForm idPrefix={`action${slotIndex}`} fields={am.fields} cfg={slot.cfg} onChange={(cfg) => updateSlot(slot.key, { cfg })} errors={problemsUnder(problems, `definition.actions.${defIndex}.config`)} groups={groups} />
                      ) : (
                        <pre className="pre">{pretty(slot.original)}</pre>
                      )}
                      {problems
                        .filter((p) => p.path === `definition.actions.${defIndex}` || p.path === `definition.actions.${defIndex}.config` || p.path === `definition.actions.${defIndex}.type`)
                        .map((p) => (
                          <p key={p.message} className="text-xs font-medium text-red-700" role="alert">
                            {p.message}
                          </p>
                        ))}
                      {slot.type === "note" ? <NotePath meta={meta} rendered={pv?.rendered} /> : null}
                      {pv && am ? <ActionPreview action={am} preview={pv} templates={preview?.templates[defIndex] ?? {}} index={defIndex} /> : null}
                    </div>
                  )}
                </div>
              );
            })}
            {actionsErrors.map((e) => (
              <p key={e} className="text-xs font-medium text-red-700" role="alert">
                {e}
              </p>
            ))}
            <div className="flex flex-wrap items-center gap-3 border-t border-slate-200 pt-4">
              <button
                type="button"
                className="btn-secondary"
                onClick={() => {
                  setPreviewWanted(true);
                  void runPreview();
                }}
                disabled={!typedSlots.length || previewBusy}
              >
                {previewBusy ? "Rendering…" : "Preview"}
              </button>
              <span className="text-xs text-slate-500">Renders every field against the trigger&apos;s sample event; nothing is sent.</span>
            </div>
            {previewError ? <p className="rounded-md bg-red-50 p-2 text-sm text-red-800 ring-1 ring-red-200">{previewError}</p> : null}
            {preview && (previewWanted || hasNote) ? <SampleDetails sample={trigger.sample} /> : null}
          </div>
        </section>
      ) : null}

      {/* ---- optional steps ---- */}
      {trigger ? (
        <>
          {filterCode !== null ? (
            <FilterCode
              code={filterCode}
              onChange={setFilterCode}
              sample={trigger.sample}
              errors={filterErrors}
              onResult={setFilterResult}
              onRemove={() => {
                setFilterCode(null);
                setFilterResult(null);
              }}
            />
          ) : null}

          {transform ? <TransformForm value={transform} onChange={setTransform} errors={transformErrors} groups={groups} aiConfigured={meta.ai_configured} /> : null}

          <div className="flex flex-wrap gap-2">
            {filterCode === null ? (
              <button type="button" className="btn-secondary" onClick={() => setFilterCode("")}>
                Add filter code
              </button>
            ) : null}
            {transform === null ? (
              <button type="button" className="btn-secondary" onClick={() => setTransform({ model: "openai/gpt-4o-mini", prompt: "", output: "summary", json: false })}>
                Add AI transform
              </button>
            ) : null}
            <button type="button" className="btn-secondary" onClick={addAction}>
              Add another action
            </button>
          </div>


          <section className="card" aria-labelledby="save-heading">
            <h2 id="save-heading" className="sr-only">
              Name and save
            </h2>
            <div className="grid gap-4 md:grid-cols-[1fr_auto]">
              <div>
                <label htmlFor="applet-name" className="field-label mb-1">
                  Name
                </label>
                <input
                  id="applet-name"
                  type="text"
                  value={shownName}
                  onChange={(e) => {
                    setNameTouched(true);
                    setName(e.target.value);
                  }}
                  aria-invalid={nameErrors.length > 0 || undefined}
                  className={`input ${nameErrors.length ? "ring-red-500" : ""}`}
                />
                {nameErrors.map((e) => (
                  <p key={e} className="mt-1 text-xs font-medium text-red-700" role="alert">
                    {e}
                  </p>
                ))}
              </div>
              <details className="text-sm md:w-72">
                <summary className="cursor-pointer text-slate-600">Advanced: retries and time zone</summary>
                <div className="mt-2 flex flex-col gap-3">
                  <div>
                    <label htmlFor="max-attempts" className="field-label mb-1">
                      Attempts before giving up
                    </label>
                    <input id="max-attempts" type="number" min={1} max={10} placeholder="5" value={maxAttempts} onChange={(e) => setMaxAttempts(e.target.value)} className="input w-24" />
                  </div>
                  <div>
                    <label htmlFor="def-timezone" className="field-label mb-1">
                      Time zone for dates in templates
                    </label>
                    <TimezoneSelect id="def-timezone" value={timezone} onChange={setTimezone} allowEmpty emptyLabel="Default (the schedule's zone, else UTC)" />
                  </div>
                </div>
              </details>
            </div>
            {problems.length ? (
              <div className="mt-4 rounded-md bg-red-50 p-3 text-sm text-red-900 ring-1 ring-red-200" data-testid="save-problems">
                <p className="font-medium">
                  Not saved: {problems.length} problem{problems.length === 1 ? "" : "s"}. Fix the fields marked in red.
                </p>
                <ul className="mt-1 list-disc pl-5 text-xs">
                  {problems.map((p, i) => (
                    <li key={i}>
                      <span className="font-mono">{p.path || "(applet)"}</span>: {p.message}
                    </li>
                  ))}
                </ul>
              </div>
            ) : saveError ? (
              <p className="mt-4 rounded-md bg-red-50 p-2 text-sm text-red-800 ring-1 ring-red-200">{saveError}</p>
            ) : null}
            <div className="mt-4 flex items-center gap-3">
              <button type="button" className="btn-primary" onClick={save} disabled={saving}>
                {saving ? "Saving…" : applet ? "Save changes" : "Save applet"}
              </button>
              {savedSnapshot !== null && savedSnapshot === snapshot ? (
                <span className="text-sm text-green-700" role="status">
                  Saved.
                </span>
              ) : dirty ? (
                <span className="text-sm text-amber-800" data-testid="unsaved">
                  Unsaved changes
                </span>
              ) : null}
            </div>
          </section>
        </>
      ) : null}
    </div>
  );
}

function TransformForm({ value, onChange, errors, groups, aiConfigured }: { value: Transform; onChange(v: Transform | null): void; errors: Map<string, string[]>; groups: IngredientGroup[]; aiConfigured: boolean }) {
  const err = (k: string) =>
    (errors.get(k) ?? []).map((e) => (
      <p key={e} className="mt-1 text-xs font-medium text-red-700" role="alert">
        {e}
      </p>
    ));
  // The prompt cannot use its own output.
  const promptGroups = groups.filter((g) => g.label !== "AI transform");
  return (
    <section className="card" aria-labelledby="transform-heading">
      <div className="mb-2 flex items-center justify-between">
        <h3 id="transform-heading" className="font-semibold">
          AI transform
        </h3>
        <button type="button" className="text-sm text-slate-500 hover:text-red-700" onClick={() => onChange(null)}>
          Remove transform
        </button>
      </div>
      <p className="help mb-3">
        Runs after the filter and before the actions: sends the prompt to an OpenAI-compatible model (OPENROUTER_BASE_URL) and puts the answer in <span className="code">{`{{ai.${value.output || "output"}}}`}</span>.
        {aiConfigured ? null : <span className="text-amber-800"> OPENROUTER_API_KEY is not set on this server, so the step is skipped with a warning.</span>}
      </p>
      <div className="grid gap-4 md:grid-cols-2">
        <div>
          <label htmlFor="transform-model" className="field-label mb-1">
            Model
          </label>
          <input id="transform-model" type="text" value={value.model} onChange={(e) => onChange({ ...value, model: e.target.value })} placeholder="openai/gpt-4o-mini" className="input font-mono" />
          {err("model")}
        </div>
        <div>
          <label htmlFor="transform-output" className="field-label mb-1">
            Output name
          </label>
          <input id="transform-output" type="text" value={value.output} onChange={(e) => onChange({ ...value, output: e.target.value })} placeholder="output" className="input font-mono" />
          {err("output")}
        </div>
      </div>
      <div className="mt-4">
        <TemplateInput
          header={
            <label htmlFor="transform-prompt" className="field-label">
              Prompt
            </label>
          }
          id="transform-prompt"
          label="Prompt" value={value.prompt} onChange={(prompt) => onChange({ ...value, prompt })} multiline rows={4} placeholder="Summarize in one sentence: {{trigger.body.title}}" groups={promptGroups} invalid={errors.has("prompt")} />
        {err("prompt")}
      </div>
      <label className="mt-3 flex items-center gap-2 text-sm">
        <input type="checkbox" checked={value.json} onChange={(e) => onChange({ ...value, json: e.target.checked })} className="h-4 w-4 rounded border-slate-300" />
        Ask for JSON and parse it (fields become <span className="code">{`{{ai.${value.output || "output"}.field}}`}</span>)
      </label>
    </section>
  );
}

/** One action's fields rendered against the sample, with expressions that rendered empty marked. */
function ActionPreview({ action, preview, templates, index }: { action: MetaAction; preview: PreviewAction; templates: Record<string, unknown>; index: number }) {
  const other = preview.warnings.filter((w) => !w.startsWith("unresolved: "));
  return (
    <div className="rounded-md bg-slate-50 p-3 ring-1 ring-slate-200" data-testid={`preview-${index}`}>
      <p className="mb-2 text-xs font-semibold tracking-wide text-slate-600 uppercase">Preview with the sample event</p>
      {preview.unresolved.length ? (
        <p className="mb-2 text-xs text-amber-900">
          Unresolved (render as empty):{" "}
          {preview.unresolved.map((u) => (
            <mark key={u} className="mr-1 rounded bg-amber-200 px-1 font-mono text-amber-950">
              {u}
            </mark>
          ))}
        </p>
      ) : null}
      <dl className="flex flex-col gap-2">
        {action.fields.map((f) => {
          const v = preview.rendered[f.name];
          if (v === undefined || v === "" || (Array.isArray(v) && v.length === 0)) return null;
          const tpl = templates[f.name];
          const segs = typeof tpl === "string" ? templateSegments(tpl, preview.unresolved) : [];
          const marked = segs.some((s) => s.unresolved);
          return (
            <div key={f.name}>
              <dt className="text-xs font-medium text-slate-600">{f.label}</dt>
              <dd className="mt-0.5 rounded bg-white px-2 py-1 font-mono text-xs break-words whitespace-pre-wrap text-slate-900 ring-1 ring-slate-200" data-testid={`preview-${index}-${f.name}`}>
                {typeof v === "string" ? v : pretty(v)}
              </dd>
              {marked ? (
                <p className="mt-1 font-mono text-xs break-words whitespace-pre-wrap text-slate-600">
                  {segs.map((s, i) =>
                    s.unresolved ? (
                      <mark key={i} className="rounded bg-amber-200 px-0.5 text-amber-950" title="did not resolve against the sample">
                        {s.text}
                      </mark>
                    ) : (
                      <span key={i}>{s.text}</span>
                    ),
                  )}
                </p>
              ) : null}
            </div>
          );
        })}
      </dl>
      {other.length ? (
        <ul className="mt-2 list-disc pl-5 text-xs text-amber-900">
          {other.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** Where the note action would write for the sample: NOTES_ROOT/folder/filename after sanitizing. */
function NotePath({ meta, rendered }: { meta: Meta; rendered: Record<string, unknown> | undefined }) {
  if (!rendered) return <p className="help">The file path for the sample event appears here.</p>;
  const folder = typeof rendered.folder === "string" ? rendered.folder : "";
  const filename = typeof rendered.filename === "string" ? rendered.filename.trim() : "";
  const segments = folder
    .split("/")
    .filter((s) => s.trim() !== "")
    .map((s) => sanitizeFilename(s, "folder"));
  const path = [meta.notes_root.replace(/\/+$/, ""), ...segments, filename ? sanitizeFilename(filename, "note") : "(file name)"].join("/");
  const append = rendered.mode === "append";
  return (
    <p className="rounded-md bg-slate-50 px-3 py-2 text-xs text-slate-700 ring-1 ring-slate-200" data-testid="note-path">
      For the sample event this {append ? "appends to" : "creates"} <span className="code break-all">{path}</span>
      {append ? "" : " (or name (2).md if it exists)"}.
    </p>
  );
}

function SampleDetails({ sample }: { sample: Record<string, unknown> }) {
  return (
    <details className="text-sm">
      <summary className="cursor-pointer text-slate-600">The sample event used by the preview</summary>
      <pre className="pre mt-2">{pretty(sample)}</pre>
    </details>
  );
}
