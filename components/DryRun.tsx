"use client";
import { useState } from "react";
import type { DryRunAction, DryRunResult } from "@/lib/executor/dry-run";
import { api, errorBody } from "@/lib/ui/api-client";
import { parseSample } from "@/lib/ui/sample";
import { RunJournal } from "./RunJournal";
import { StatusBadge } from "./StatusBadge";
import { SamplePicker, builtinChoice, type SampleChoice } from "./editor/SamplePicker";

/**
 * "Test without sending": the applet run on the chosen event (a received one, the sample, JSON
 * typed here, or the trigger fetched now) with every action recorded (POST /api/applets/:id/dry-run).
 * Shows each request exactly as it would have gone out (secrets redacted), the file a note would
 * write, the email it would send, and the journal tree the run would have. Nothing is sent or stored.
 */
export function DryRun({ appletId, sample, canFetch }: { appletId: string; sample: Record<string, unknown>; canFetch: boolean }) {
  const [choice, setChoice] = useState<SampleChoice>(() => builtinChoice(sample));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<DryRunResult | null>(null);

  async function run(fetchNow: boolean) {
    setError(null);
    let json: { event_id?: string; payload?: Record<string, unknown>; fetch?: true; sample?: true };
    if (fetchNow) json = { fetch: true };
    else if (choice.source === "builtin") json = { sample: true };
    else if (choice.source.startsWith("event:")) json = { event_id: choice.source.slice("event:".length) };
    else {
      const parsed = parseSample(choice.text);
      if (!parsed.ok) return setError(parsed.error);
      json = { payload: parsed.value };
    }
    setBusy(true);
    const res = await api.api.applets[":id"]["dry-run"].$post({ param: { id: appletId }, json }).catch(() => null);
    setBusy(false);
    if (!res?.ok) return setError((res && (await errorBody(res)).error) ?? (res ? `failed (${res.status})` : "network error"));
    setResult(await res.json());
  }

  return (
    <div className="flex min-w-0 flex-col gap-3" data-testid="dry-run">
      <SamplePicker appletId={appletId} builtin={sample} fetched={[]} value={choice} onChange={setChoice} idPrefix="dry-run-payload" textLabel="Event to test on (JSON)" />
      <div className="flex flex-wrap items-center gap-3">
        <button type="button" className="btn-primary" onClick={() => void run(false)} disabled={busy}>
          {busy ? "Testing…" : "Test without sending"}
        </button>
        {canFetch ? (
          <button type="button" className="btn-secondary" onClick={() => void run(true)} disabled={busy}>
            Fetch now and test
          </button>
        ) : null}
        {error ? <span className="text-sm text-red-700">{error}</span> : null}
      </div>
      {result ? <DryRunView result={result} /> : null}
    </div>
  );
}

export function DryRunView({ result }: { result: DryRunResult }) {
  const on = result.event.id ? `event ${result.event.id.slice(0, 8)}` : `the ${result.event.source}`;
  return (
    <div className="flex min-w-0 flex-col gap-3" data-testid="dry-run-result">
      <p className="flex flex-wrap items-center gap-2 rounded-md bg-amber-50 px-3 py-2 text-sm text-amber-950 ring-1 ring-amber-200" role="status">
        <span className="font-medium">Dry run on {on}:</span> the run would end <StatusBadge status={result.status} />
        {result.reason ? <span className="wrap-anywhere">({result.reason})</span> : null}
        <span>Nothing was sent, written or stored.</span>
      </p>
      <h3 className="text-sm font-semibold">What the actions would have done</h3>
      {result.actions.length === 0 ? <p className="text-sm text-slate-600">No action would run.</p> : null}
      <ol className="flex min-w-0 flex-col gap-2">
        {result.actions.map((a, i) => (
          <RecordedAction key={i} action={a} />
        ))}
      </ol>
      <details>
        <summary className="cursor-pointer text-sm font-semibold">The run&apos;s steps, as the run page would show them</summary>
        <div className="mt-2">
          <RunJournal steps={result.steps} runAttempt={1} />
        </div>
      </details>
    </div>
  );
}

function RecordedAction({ action: a }: { action: DryRunAction }) {
  const where = `${a.step_id}${a.iteration?.length ? ` [item ${a.iteration.join(".")}]` : ""}`;
  const rec = a.record as (Record<string, unknown> & { kind: string }) | undefined;
  return (
    <li className="min-w-0 rounded-md p-3 text-sm ring-1 ring-slate-200" data-testid="dry-run-action">
      <p className="flex flex-wrap items-center gap-2">
        <span className="font-mono text-slate-500">{where}</span> <span className="font-medium">{a.type}</span> <StatusBadge status={a.status} />
      </p>
      <p className="mt-1 wrap-anywhere text-slate-800">{a.summary}</p>
      {a.requests?.map((q, j) => (
        <pre key={j} className="pre mt-2 overflow-x-auto text-xs whitespace-pre-wrap wrap-anywhere">
          {`${q.method} ${q.url}\n${Object.entries(q.headers)
            .map(([k, v]) => `${k}: ${v}`)
            .join("\n")}${q.body !== null ? `\n\n${q.body}` : ""}`}
        </pre>
      ))}
      {rec?.kind === "file" ? <pre className="pre mt-2 overflow-x-auto text-xs whitespace-pre-wrap wrap-anywhere">{`${String(rec.path)} (${String(rec.mode)}${rec.exists ? ", exists" : ""})\n\n${String(rec.content)}`}</pre> : null}
      {rec?.kind === "email" ? <pre className="pre mt-2 max-h-80 overflow-auto text-xs whitespace-pre-wrap wrap-anywhere">{String(rec.eml).replace(/\r\n/g, "\n")}</pre> : null}
      {rec?.kind === "mqtt" ? <pre className="pre mt-2 overflow-x-auto text-xs whitespace-pre-wrap wrap-anywhere">{`${String(rec.broker_url)} → ${String(rec.topic)} (QoS ${String(rec.qos)}${rec.retain ? ", retained" : ""})\n\n${String(rec.payload)}`}</pre> : null}
      {rec?.kind === "api" ? <pre className="pre mt-2 overflow-x-auto text-xs whitespace-pre-wrap wrap-anywhere">{JSON.stringify(rec.request, null, 2)}</pre> : null}
    </li>
  );
}
