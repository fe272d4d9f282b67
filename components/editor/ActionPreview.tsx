"use client";
import { pretty, templateSegments } from "@/lib/ui/format";
import type { MetaAction } from "@/lib/api/queries";
import type { PreviewAction } from "./api";

/** One action's fields rendered against the sample, with expressions that rendered empty marked. */
export function ActionPreview({ action, preview, templates, index }: { action: MetaAction; preview: PreviewAction; templates: Record<string, unknown>; index: number }) {
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

export function SampleDetails({ sample }: { sample: Record<string, unknown> }) {
  return (
    <details className="text-sm">
      <summary className="cursor-pointer text-slate-600">The sample event used by the preview</summary>
      <pre className="pre mt-2">{pretty(sample)}</pre>
    </details>
  );
}
