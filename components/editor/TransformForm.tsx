"use client";
import type { IngredientGroup } from "@/lib/ui/format";
import type { TransformDraft } from "./draft";
import { TemplateInput } from "./TemplateInput";

/** The optional AI transform step: model, prompt, where the answer goes. */
export function TransformForm({ value, onChange, errors, groups, aiConfigured }: { value: TransformDraft; onChange: (v: TransformDraft | null) => void; errors: Map<string, string[]>; groups: IngredientGroup[]; aiConfigured: boolean }) {
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
