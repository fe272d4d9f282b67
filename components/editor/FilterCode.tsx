"use client";
import { useRef, useState } from "react";
import { filterPlaceholder, pretty } from "@/lib/ui/format";
import { testFilter, type FilterTestResult } from "./api";

export type { FilterTestResult };

/**
 * The filter code editor: a monospace textarea where Tab indents (Esc, then Tab, moves focus on, so
 * keyboard users are not trapped), and "Test filter" runs the code in the sandbox against the sample.
 */
export function FilterCode(props: { code: string; onChange: (code: string) => void; sample: Record<string, unknown>; errors: string[]; onResult: (r: FilterTestResult | null) => void; onRemove: () => void }) {
  const ref = useRef<HTMLTextAreaElement>(null);
  const escaped = useRef(false);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<FilterTestResult | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  function onKeyDown(e: React.KeyboardEvent<HTMLTextAreaElement>) {
    if (e.key === "Escape") {
      escaped.current = true;
      return;
    }
    if (e.key === "Tab" && !escaped.current && !e.shiftKey) {
      e.preventDefault();
      const el = e.currentTarget;
      const { selectionStart: s, selectionEnd: end, value } = el;
      const next = value.slice(0, s) + "  " + value.slice(end);
      props.onChange(next);
      requestAnimationFrame(() => el.setSelectionRange(s + 2, s + 2));
      return;
    }
    escaped.current = false;
  }

  async function test() {
    setBusy(true);
    setFailure(null);
    const answer = await testFilter(props.code, props.sample);
    setBusy(false);
    if (!answer.ok) {
      setResult(null);
      props.onResult(null);
      return setFailure(answer.error);
    }
    setResult(answer.value);
    props.onResult(answer.value);
  }

  return (
    <section className="card" aria-labelledby="filter-heading">
      <div className="mb-2 flex items-center justify-between">
        <h3 id="filter-heading" className="font-semibold">
          Filter code
        </h3>
        <button type="button" className="text-sm text-slate-500 hover:text-red-700" onClick={props.onRemove}>
          Remove filter
        </button>
      </div>
      <p className="help mb-2">
        JavaScript run before the actions, in a sandbox (1 s, no network). It sees <span className="code">trigger</span>, <span className="code">applet</span>; call{" "}
        <span className="code">skip(&quot;reason&quot;)</span> to stop the run, <span className="code">set(&quot;name&quot;, value)</span> to pass <span className="code">{"{{vars.name}}"}</span> to the actions,{" "}
        <span className="code">console.log()</span> for the run log. Tab indents; Esc then Tab leaves the editor.
      </p>
      <textarea
        ref={ref}
        aria-label="Filter code"
        value={props.code}
        onChange={(e) => props.onChange(e.target.value)}
        onKeyDown={onKeyDown}
        spellCheck={false}
        rows={8}
        placeholder={filterPlaceholder(props.sample)}
        className={`input font-mono text-[13px] leading-relaxed ${props.errors.length ? "ring-red-500" : ""}`}
      />
      {props.errors.map((e) => (
        <p key={e} className="mt-1 text-xs font-medium text-red-700">
          {e}
        </p>
      ))}
      <div className="mt-2 flex items-center gap-3">
        <button type="button" className="btn-secondary" onClick={() => void test()} disabled={busy || !props.code.trim()}>
          {busy ? "Testing…" : "Test filter"}
        </button>
        <span className="text-xs text-slate-500">Runs against the sample picked above.</span>
      </div>
      {failure ? <p className="mt-2 rounded-md bg-red-50 p-2 text-sm text-red-800 ring-1 ring-red-200">{failure}</p> : null}
      {result ? (
        <div className="mt-3 flex flex-col gap-2 text-sm" data-testid="filter-result">
          {result.error ? (
            <p className="rounded-md bg-red-50 p-2 text-red-800 ring-1 ring-red-200">
              <span className="font-semibold">Error:</span> {result.error} <span className="text-xs">(the run would fail, without retry)</span>
            </p>
          ) : result.skipped ? (
            <p className="rounded-md bg-amber-50 p-2 text-amber-900 ring-1 ring-amber-200">
              <span className="font-semibold">Skipped</span>
              {result.reason ? `: ${result.reason}` : ""} (the actions would not run)
            </p>
          ) : (
            <p className="rounded-md bg-green-50 p-2 text-green-900 ring-1 ring-green-200">
              <span className="font-semibold">Passes</span>: the actions would run.
            </p>
          )}
          <div className="grid gap-2 md:grid-cols-2">
            <div>
              <p className="text-xs font-semibold text-slate-600">console.log ({result.logs.length})</p>
              <pre className="pre mt-1 min-h-10">{result.logs.length ? result.logs.join("\n") : "(nothing logged)"}</pre>
            </div>
            <div>
              <p className="text-xs font-semibold text-slate-600">vars</p>
              <pre className="pre mt-1 min-h-10">{Object.keys(result.vars ?? {}).length ? pretty(result.vars) : "(none set)"}</pre>
            </div>
          </div>
          {typeof result.duration_ms === "number" ? <p className="text-xs text-slate-500">Took {Math.round(result.duration_ms)} ms.</p> : null}
        </div>
      ) : null}
    </section>
  );
}
