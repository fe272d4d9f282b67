"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { api, errorBody } from "@/lib/ui/api-client";

/** Retry (failed or dead runs: the same run, attempt + 1) and Replay (a new run from the same event). */
export function RunActions({ runId, canRetry }: { runId: string; canRetry: boolean }) {
  const router = useRouter();
  const [busy, setBusy] = useState<"retry" | "replay" | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function call(kind: "retry" | "replay") {
    setBusy(kind);
    setError(null);
    const route = api.api.runs[":id"][kind];
    const res = await route.$post({ param: { id: runId } }).catch(() => null);
    setBusy(null);
    if (!res?.ok) return setError((res && (await errorBody(res)).error) ?? (res ? `failed (${res.status})` : "network error"));
    // Replay is a new run: open it. Retry is this run again.
    if (kind === "replay") router.push(`/runs/${(await res.json()).run_id}`);
    else router.refresh();
  }

  return (
    <div className="flex flex-wrap items-center gap-2">
      {canRetry ? (
        <button type="button" className="btn-primary" onClick={() => void call("retry")} disabled={busy !== null} title="Queue this run again with attempt + 1; steps that already succeeded are not repeated">
          {busy === "retry" ? "Retrying…" : "Retry"}
        </button>
      ) : null}
      <button type="button" className="btn-secondary" onClick={() => void call("replay")} disabled={busy !== null} title="Start a new run from the same event, from the first step">
        {busy === "replay" ? "Replaying…" : "Replay"}
      </button>
      {error ? <span className="text-sm text-red-700">{error}</span> : null}
    </div>
  );
}
