"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";

/** Retry (failed or dead runs: the same run, attempt + 1) and Replay (a new run from the same event). */
export function RunActions({ runId, canRetry }: { runId: string; canRetry: boolean }) {
  const router = useRouter();
  const [busy, setBusy] = useState<"retry" | "replay" | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function call(kind: "retry" | "replay") {
    setBusy(kind);
    setError(null);
    const res = await fetch(`/api/runs/${runId}/${kind}`, { method: "POST" }).catch(() => null);
    const body = res ? ((await res.json().catch(() => ({}))) as { run_id?: string; error?: string }) : null;
    setBusy(null);
    if (!res?.ok) return setError(body?.error ?? (res ? `failed (${res.status})` : "network error"));
    if (kind === "replay" && body?.run_id) router.push(`/runs/${body.run_id}`);
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
