"use client";
import { useState } from "react";
import { api, errorBody } from "@/lib/ui/api-client";

/** A run the bulk retry may take: failed or dead (what the Retry button takes). */
export const retryable = (status: string): boolean => status === "failed" || status === "dead";

/** The checkbox that selects one failed or dead run for a bulk retry. */
export function SelectRunBox({ id, label, checked, onChange }: { id: string; label: string; checked: boolean; onChange: (id: string, on: boolean) => void }) {
  return <input type="checkbox" className="h-4 w-4" checked={checked} onChange={(e) => onChange(id, e.target.checked)} aria-label={`Select ${label} for retry`} data-testid="select-run" />;
}

/**
 * Bulk retry: the selected failed and dead runs, retried after a confirmation that says how
 * many, through POST /api/runs/bulk-retry (one store transaction per batch, the Retry button's
 * semantics). The answer says how many were retried and why any were not.
 */
export function BulkRetryBar({ selected, onDone, onClear }: { selected: string[]; onDone: (retried: string[]) => void; onClear: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const n = selected.length;
  const runs = (k: number) => `${k} run${k === 1 ? "" : "s"}`;

  async function retry() {
    setBusy(true);
    setMessage(null);
    try {
      const res = await api.api.runs["bulk-retry"].$post({ json: { run_ids: selected } });
      if (!res.ok) {
        const body = await errorBody(res);
        setMessage({ ok: false, text: body.problems?.map((p) => p.message).join("; ") || body.error || `retry failed (${res.status})` });
        return;
      }
      const { retried, skipped } = await res.json();
      const reasons = [...new Set(skipped.map((s) => s.reason))];
      setMessage({ ok: true, text: `Retried ${runs(retried.length)}.${skipped.length ? ` ${runs(skipped.length)} not retried: ${reasons.join("; ")}.` : ""}` });
      setConfirming(false);
      onDone(retried.map((r) => r.run_id));
    } catch {
      setMessage({ ok: false, text: "could not reach the server; try again" });
    } finally {
      setBusy(false);
    }
  }

  if (!n && !message) return null;
  return (
    <div className="mb-2 flex flex-wrap items-center gap-2 rounded-md bg-indigo-50 px-3 py-2 text-sm text-indigo-950 ring-1 ring-indigo-200" data-testid="bulk-retry">
      {n && !confirming ? (
        <>
          <span>{runs(n)} selected</span>
          <button type="button" className="btn-primary" onClick={() => setConfirming(true)}>
            Retry {runs(n)}…
          </button>
          <button type="button" className="btn-secondary" onClick={onClear}>
            Clear selection
          </button>
        </>
      ) : null}
      {n && confirming ? (
        <div role="alertdialog" aria-labelledby="bulk-retry-q" className="flex flex-wrap items-center gap-2">
          <span id="bulk-retry-q" data-testid="bulk-retry-confirm">
            Retry {runs(n)}? Each failed or dead run is queued again now with one more attempt; steps that already succeeded are not repeated.
          </span>
          <button type="button" className="btn-primary" onClick={() => void retry()} disabled={busy} autoFocus>
            {busy ? "Retrying…" : `Yes, retry ${runs(n)}`}
          </button>
          <button type="button" className="btn-secondary" onClick={() => setConfirming(false)} disabled={busy}>
            Cancel
          </button>
        </div>
      ) : null}
      {message ? (
        <span role="status" className={message.ok ? "text-green-800" : "text-red-700"} data-testid="bulk-retry-result">
          {message.text}
        </span>
      ) : null}
    </div>
  );
}
