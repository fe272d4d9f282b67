"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { api, errorBody } from "@/lib/ui/api-client";

/**
 * "Retry from step X" on a failed or dead run: the steps before X keep their recorded outputs
 * (nothing before X is sent again), X and what follows run anew (POST /api/runs/:id/retry-from).
 * Offers the steps that ran, in the order they ran, the failed one first chosen.
 */
export function RetryFromStep({ runId, steps, failed }: { runId: string; steps: string[]; failed: string | null }) {
  const router = useRouter();
  const [step, setStep] = useState(failed ?? steps[0] ?? "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (steps.length === 0) return null;

  async function retry() {
    setBusy(true);
    setError(null);
    const res = await api.api.runs[":id"]["retry-from"].$post({ param: { id: runId }, json: { step } }).catch(() => null);
    setBusy(false);
    if (!res?.ok) return setError((res && (await errorBody(res)).error) ?? (res ? `failed (${res.status})` : "network error"));
    router.refresh();
  }

  return (
    <div className="flex flex-wrap items-center gap-2 text-sm" data-testid="retry-from-step">
      <label htmlFor="retry-from" className="text-slate-700">
        Retry from step
      </label>
      <select id="retry-from" className="input w-auto max-w-48" value={step} onChange={(e) => setStep(e.target.value)}>
        {steps.map((s) => (
          <option key={s} value={s}>
            {s}
            {s === failed ? " (failed)" : ""}
          </option>
        ))}
      </select>
      <button type="button" className="btn-secondary" onClick={() => void retry()} disabled={busy || !step} title="The steps before it keep their recorded outputs and are not sent again; this step and the ones after it run again">
        {busy ? "Retrying…" : "Retry from here"}
      </button>
      {error ? <span className="text-red-700">{error}</span> : null}
    </div>
  );
}
