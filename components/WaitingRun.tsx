"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { api, errorBody } from "@/lib/ui/api-client";
import { WaitWords } from "./WaitWords";

/**
 * A run parked at a wait step: what it waits for ("waiting for approval — times out 16:02"), and
 * the run log's two actions on it. Resume now ends the wait as if its time had come (an approval
 * counts as approved by you); Cancel ends the run, and its links then say it was cancelled.
 */
export function WaitingRun({ runId, summary, message, kind, detail, strictOrder }: { runId: string; summary: string; message: string | null; kind: string; detail: unknown; strictOrder: "in_order" | "per_key" | null }) {
  const router = useRouter();
  const [busy, setBusy] = useState<"resume" | "cancel" | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function call(kind: "resume" | "cancel") {
    if (kind === "cancel" && !window.confirm("Cancel this waiting run? Its steps after the wait will not run.")) return;
    setBusy(kind);
    setError(null);
    const res = await api.api.runs[":id"][kind].$post({ param: { id: runId } }).catch(() => null);
    setBusy(null);
    if (!res?.ok) return setError((res && (await errorBody(res)).error) ?? (res ? `failed (${res.status})` : "network error"));
    router.refresh();
  }

  return (
    <section className="mb-4 rounded-md bg-violet-50 p-3 text-sm text-violet-950 ring-1 ring-violet-200" data-testid="waiting-run">
      <p className="font-medium" data-testid="waiting-summary">
        <WaitWords stored={summary} kind={kind} detail={detail} />
      </p>
      {message ? <p className="mt-1 whitespace-pre-wrap break-words text-violet-900">“{message}”</p> : null}
      <p className="mt-1 text-xs text-violet-800">
        {strictOrder === "per_key"
          ? "The run holds no worker while it waits. The applet keeps strict order: its later runs with this run's key wait until this one has finished."
          : strictOrder === "in_order"
            ? "The run holds no worker while it waits. The applet keeps strict order: its later runs wait until this one has finished."
            : "The run holds no worker while it waits, and the applet's next runs do not wait for it."}
      </p>
      <div className="mt-2 flex flex-wrap items-center gap-2">
        <button type="button" className="btn-primary" onClick={() => void call("resume")} disabled={busy !== null} title="End the wait now and carry on with the next step">
          {busy === "resume" ? "Resuming…" : "Resume now"}
        </button>
        <button type="button" className="btn-secondary" onClick={() => void call("cancel")} disabled={busy !== null} title="End this run as cancelled">
          {busy === "cancel" ? "Cancelling…" : "Cancel run"}
        </button>
        {error ? <span className="text-sm text-red-700">{error}</span> : null}
      </div>
    </section>
  );
}
