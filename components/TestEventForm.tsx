"use client";
import Link from "next/link";
import { useState } from "react";
import { api, errorBody } from "@/lib/ui/api-client";

/** "Send test event": a manual event with this payload and a queued run (POST /api/applets/:id/test). */
export function TestEventForm({ appletId, sample }: { appletId: string; sample: Record<string, unknown> }) {
  const [text, setText] = useState(() => JSON.stringify(sample, null, 2));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [runId, setRunId] = useState<string | null>(null);

  async function send() {
    setError(null);
    setRunId(null);
    let payload: unknown;
    try {
      payload = JSON.parse(text) as unknown;
    } catch (err) {
      return setError(`Not valid JSON: ${(err as Error).message}`);
    }
    if (!payload || typeof payload !== "object" || Array.isArray(payload)) return setError("The payload must be a JSON object.");
    setBusy(true);
    const res = await api.api.applets[":id"].test.$post({ param: { id: appletId }, json: { ...payload } }).catch(() => null);
    setBusy(false);
    if (!res?.ok) return setError((res && (await errorBody(res)).error) ?? (res ? `failed (${res.status})` : "network error"));
    setRunId((await res.json()).run_id);
  }

  return (
    <div className="flex flex-col gap-2">
      <label htmlFor="test-payload" className="text-xs text-slate-600">
        Payload (the trigger&apos;s ingredients; prefilled with its sample)
      </label>
      <textarea id="test-payload" value={text} onChange={(e) => setText(e.target.value)} rows={10} spellCheck={false} className="input font-mono text-xs" />
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
