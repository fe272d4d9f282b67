"use client";
import { pretty } from "@/lib/ui/format";
import { TemplateInput } from "../TemplateInput";
import { useSteps } from "./context";
import { ConditionsEditor } from "./ConditionsEditor";
import { StepList } from "./StepList";
import { emptyGroup, type StepDraft, type StepOf } from "./tree";

type Body<K extends StepDraft["kind"]> = { step: StepOf<K>; set: (s: StepDraft) => void };

/** An action's `when` (runs only if) and `continue_on_error`. */
export function WhenOptions({ step, set }: Body<"action">) {
  const { freshKey } = useSteps();
  return (
    <div className="flex flex-col gap-2 border-t border-slate-100 pt-2">
      <div className="flex flex-wrap gap-4 text-sm">
        <label className="flex items-center gap-2">
          <input type="checkbox" checked={step.when !== null} onChange={(e) => set({ ...step, when: e.target.checked ? emptyGroup(freshKey) : null })} />
          Run only if…
        </label>
        <label className="flex items-center gap-2">
          <input type="checkbox" checked={step.continueOnError} onChange={(e) => set({ ...step, continueOnError: e.target.checked })} />
          Go on when it fails
        </label>
      </div>
      {step.when ? <ConditionsEditor group={step.when} onChange={(when) => set({ ...step, when })} label={`Conditions of ${step.id}`} fresh={freshKey} /> : null}
    </div>
  );
}

export function IfBody({ step, set }: Body<"if">) {
  const { freshKey } = useSteps();
  const taken = useTaken(step);
  return (
    <>
      <ConditionsEditor group={step.conditions} onChange={(conditions) => set({ ...step, conditions })} label={`Conditions of ${step.id}`} fresh={freshKey} />
      <Branch title="Then" parent={step} list="then" steps={step.then} taken={taken?.includes("then")} />
      {step.else ? (
        <Branch title="Else" parent={step} list="else" steps={step.else} taken={taken?.includes("else")} onRemove={() => set({ ...step, else: null })} />
      ) : (
        <button type="button" className="self-start text-sm text-indigo-700 hover:underline" onClick={() => set({ ...step, else: [] })}>
          + Else (when the conditions do not hold)
        </button>
      )}
    </>
  );
}

export function PathsBody({ step, set }: Body<"paths">) {
  const { freshKey } = useSteps();
  const taken = useTaken(step);
  const setPath = (i: number, p: StepOf<"paths">["paths"][number]) => set({ ...step, paths: step.paths.map((x, j) => (j === i ? p : x)) });
  return (
    <>
      <label className="flex flex-wrap items-center gap-2 text-sm">
        Run
        <select className="rounded-md border-0 py-1 pr-7 pl-2 text-sm ring-1 ring-slate-300" value={step.mode} onChange={(e) => set({ ...step, mode: e.target.value as "first" | "all" })} aria-label={`Mode of ${step.id}`}>
          <option value="first">the first path whose conditions hold</option>
          <option value="all">every path whose conditions hold</option>
        </select>
      </label>
      {step.paths.map((p, i) => (
        <Branch
          key={p.key}
          title={`Path ${i + 1}`}
          parent={step}
          list={`paths.${i}.steps`}
          steps={p.steps}
          taken={taken?.includes(p.name)}
          onRemove={step.paths.length > 1 ? () => set({ ...step, paths: step.paths.filter((_, j) => j !== i) }) : undefined}
          head={
            <>
              <input aria-label={`Name of path ${i + 1} of ${step.id}`} className="input w-full sm:w-48" value={p.name} onChange={(e) => setPath(i, { ...p, name: e.target.value })} />
              <ConditionsEditor group={p.conditions} onChange={(conditions) => setPath(i, { ...p, conditions })} label={`Conditions of path ${p.name || i + 1}`} fresh={freshKey} />
            </>
          }
        />
      ))}
      <div className="flex flex-wrap gap-4 text-sm">
        <button type="button" className="text-indigo-700 hover:underline" onClick={() => set({ ...step, paths: [...step.paths, { key: freshKey(), name: `path_${step.paths.length + 1}`, conditions: emptyGroup(freshKey), steps: [] }] })}>
          + Path
        </button>
        {step.otherwise ? null : (
          <button type="button" className="text-indigo-700 hover:underline" onClick={() => set({ ...step, otherwise: [] })}>
            + Otherwise (when no path holds)
          </button>
        )}
      </div>
      {step.otherwise ? <Branch title="Otherwise" parent={step} list="otherwise" steps={step.otherwise} taken={taken?.includes("otherwise")} onRemove={() => set({ ...step, otherwise: null })} /> : null}
    </>
  );
}

export function ForEachBody({ step, set }: Body<"for_each">) {
  const { groups, paths, walk } = useSteps();
  const path = paths.get(step.key);
  // The preview's entries for the steps inside, per item (the first items only).
  const inside = path ? [...walk.entries()].filter(([p]) => p.startsWith(`${path}.steps.`)).flatMap(([, es]) => es) : [];
  const byItem = new Map<number, typeof inside>();
  for (const e of inside) if (e.rendered) byItem.set(e.iteration?.at(-1) ?? 0, [...(byItem.get(e.iteration?.at(-1) ?? 0) ?? []), e]);
  return (
    <>
      <TemplateInput id={`${step.key}-items`} label={`Items of ${step.id}`} value={step.items} onChange={(items) => set({ ...step, items })} placeholder="{{trigger.body.items}}" mono groups={groups} header={<span className="text-sm font-medium">For each item of</span>} />
      <div className="flex flex-wrap items-center gap-4 text-sm">
        <label className="flex items-center gap-2">
          At most
          <input type="number" min={1} max={1000} className="input w-24" placeholder="100" aria-label={`Most items of ${step.id}`} value={step.maxItems} onChange={(e) => set({ ...step, maxItems: e.target.value })} />
          items
        </label>
        <label className="flex items-center gap-2">
          <input type="checkbox" checked={step.continueOnError} onChange={(e) => set({ ...step, continueOnError: e.target.checked })} />
          Go on with the next item when one fails
        </label>
      </div>
      <p className="text-xs text-slate-500">
        Inside, <span className="code">{"{{item}}"}</span> is the item and <span className="code">{"{{index}}"}</span> its place (0, 1, …).
      </p>
      <Branch title="Each item" parent={step} list="steps" steps={step.steps} />
      {[...byItem.entries()].map(([i, es]) => (
        <div key={i} className="rounded-md bg-slate-50 p-2 text-xs ring-1 ring-slate-200" data-testid={`preview-item-${step.id}-${i}`}>
          <p className="mb-1 font-semibold text-slate-700">Preview, item {i + 1}</p>
          {es.map((e) => (
            <div key={e.path} className="mb-1">
              <span className="font-mono text-slate-600">{e.id}</span>
              <pre className="mt-0.5 overflow-x-auto whitespace-pre-wrap break-words">{pretty(e.rendered)}</pre>
            </div>
          ))}
        </div>
      ))}
    </>
  );
}

export function StopBody({ step, set }: Body<"stop">) {
  const { groups } = useSteps();
  return (
    <>
      <label className="flex flex-wrap items-center gap-2 text-sm">
        End the run as
        <select className="rounded-md border-0 py-1 pr-7 pl-2 text-sm ring-1 ring-slate-300" value={step.status} aria-label={`Status of ${step.id}`} onChange={(e) => set({ ...step, status: e.target.value as "succeeded" | "skipped" })}>
          <option value="skipped">skipped</option>
          <option value="succeeded">succeeded</option>
        </select>
      </label>
      <TemplateInput id={`${step.key}-reason`} label={`Reason of ${step.id}`} value={step.reason} onChange={(reason) => set({ ...step, reason })} placeholder="customer {{trigger.body.email}} already exists" groups={groups} header={<span className="text-sm font-medium">Reason (shown on the run)</span>} />
    </>
  );
}

export function FilterBody({ step, set }: Body<"filter">) {
  return (
    <label className="flex flex-col gap-1 text-sm">
      <span className="font-medium">Filter code (JavaScript: skip(&quot;why&quot;) ends the run, set(&quot;name&quot;, value) adds a var)</span>
      <textarea aria-label={`Code of ${step.id}`} rows={5} className="input font-mono text-[13px]" value={step.code} onChange={(e) => set({ ...step, code: e.target.value })} spellCheck={false} />
    </label>
  );
}

export function AiBody({ step, set }: Body<"ai">) {
  const { groups } = useSteps();
  return (
    <div className="grid gap-2 sm:grid-cols-2">
      <label className="flex flex-col gap-1 text-sm">
        Model
        <input className="input font-mono" value={step.model} onChange={(e) => set({ ...step, model: e.target.value })} aria-label={`Model of ${step.id}`} />
      </label>
      <label className="flex flex-col gap-1 text-sm">
        Output name (<span className="code">{`{{ai.${step.output || "output"}}}`}</span>)
        <input className="input font-mono" value={step.output} onChange={(e) => set({ ...step, output: e.target.value })} aria-label={`Output name of ${step.id}`} />
      </label>
      <div className="sm:col-span-2">
        <TemplateInput id={`${step.key}-prompt`} label={`Prompt of ${step.id}`} value={step.prompt} onChange={(prompt) => set({ ...step, prompt })} multiline groups={groups} header={<span className="text-sm font-medium">Prompt</span>} />
      </div>
      <label className="flex items-center gap-2 text-sm">
        <input type="checkbox" checked={step.json} onChange={(e) => set({ ...step, json: e.target.checked })} />
        Ask for JSON and parse it
      </label>
    </div>
  );
}

/** The branch names the preview took at this step (null: no preview yet). */
function useTaken(step: StepDraft): string[] | null {
  const { preview, paths, walk } = useSteps();
  if (!preview.preview || preview.preview.steps.length === 0) return null;
  const path = paths.get(step.key);
  const entries = path ? (walk.get(path) ?? []) : [];
  return entries.flatMap((e) => e.taken ?? (e.decision ? [e.decision] : []));
}

/** A branch: its steps, marked taken / not taken by the preview, with its own "Add step". */
function Branch({ title, parent, list, steps, taken, onRemove, head }: { title: string; parent: StepDraft; list: string; steps: StepDraft[]; taken?: boolean; onRemove?: () => void; head?: React.ReactNode }) {
  const tone = taken === undefined ? "ring-slate-200" : taken ? "ring-2 ring-emerald-400" : "ring-slate-200 opacity-60";
  return (
    <div className={`flex flex-col gap-2 rounded-md bg-slate-50/60 p-2 ring-1 ${tone}`} data-testid={`branch-${parent.id}-${list}`} data-taken={taken === undefined ? undefined : String(taken)}>
      <div className="flex items-center justify-between gap-2">
        <p className="text-xs font-semibold tracking-wide text-slate-600 uppercase">
          {title}
          {taken === undefined ? null : taken ? <span className="ml-2 rounded bg-emerald-100 px-1.5 py-0.5 text-emerald-900 normal-case">taken in preview</span> : <span className="ml-2 normal-case text-slate-500">not taken</span>}
        </p>
        {onRemove ? (
          <button type="button" className="text-xs text-slate-500 hover:text-red-700" onClick={onRemove} aria-label={`Remove ${title} of ${parent.id}`}>
            Remove
          </button>
        ) : null}
      </div>
      {head}
      <StepList steps={steps} where={{ parent: parent.key, list }} />
    </div>
  );
}
