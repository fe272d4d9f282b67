"use client";
import Link from "next/link";
import { useState } from "react";
import { api, errorBody } from "@/lib/ui/api-client";
import { freshTestPayload, parseSample } from "@/lib/ui/sample";
import { SamplePicker } from "./editor/SamplePicker";
import { useSharedSample } from "./editor/sharedSample";

/**
 * "Send test event": a manual event with this payload and a queued run (POST /api/applets/:id/test).
 * Its sample is the one the applet's editor tests with (./editor/sharedSample): edited there, it is
 * what this sends.
 */
export function TestEventForm({ appletId, triggerType, sample }: { appletId: string; triggerType: string; sample: Record<string, unknown> }) {
  const [choice, setChoice] = useSharedSample({ appletId, triggerType }, sample);
  const text = choice.text;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [runId, setRunId] = useState<string | null>(null);

  async function send() {
    setError(null);
    setRunId(null);
    const parsed = parseSample(text);
    if (!parsed.ok) return setError(parsed.error);
    const payload = freshTestPayload(parsed.value, sample, new Date());
    setBusy(true);
    const res = await api.api.applets[":id"].test.$post({ param: { id: appletId }, json: { ...payload } }).catch(() => null);
    setBusy(false);
    if (!res?.ok) return setError((res && (await errorBody(res)).error) ?? (res ? `failed (${res.status})` : "network error"));
    setRunId((await res.json()).run_id);
  }

  return (
    <div className="flex flex-col gap-2">
      <SamplePicker appletId={appletId} builtin={sample} fetched={[]} value={choice} onChange={setChoice} idPrefix="test-payload" textLabel="Test event payload (JSON)" />
      <p className="text-xs text-slate-500">The built-in sample&apos;s received_at and user-agent are set to this send&apos;s.</p>
      <div className="flex flex-wrap items-center gap-3">
        <button type="button" className="btn-primary" onClick={() => void send()} disabled={busy}>
          {busy ? "Sending…" : "Send test event"}
        </button>
        {runId ? (
          <span className="text-sm text-green-800" role="status">
            Queued.{" "}
            <Link href={`/runs/${runId}`} className="font-medium text-indigo-700 underline">
              Open the run
            </Link>
          </span>
        ) : null}
        {error ? <span className="text-sm text-red-700">{error}</span> : null}
      </div>
    </div>
  );
}
