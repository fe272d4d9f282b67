"use client";
import Link from "next/link";
import { useState } from "react";
import { LocalTime } from "@/components/LocalTime";
import { StatusBadge } from "@/components/StatusBadge";
import type { LedgerItem } from "@/lib/fires/view";
import { api, errorBody } from "@/lib/ui/api-client";

/** What each outcome is called on the page. */
export const OUTCOME_LABELS: Record<string, string> = {
  fired: "fired",
  late: "late",
  skipped_overlap: "skipped (overlap)",
  dropped_catchup: "dropped (catch-up)",
  missed: "missed",
  deduplicated: "deduplicated",
  refused: "refused",
  filtered: "filtered",
  paused: "paused",
  disabled: "disabled",
  debounced: "merged by debounce",
  rate_limited: "held by a rate limit",
};

const TONE: Record<string, string> = {
  fired: "bg-green-50 text-green-800 ring-green-200",
  late: "bg-amber-50 text-amber-900 ring-amber-200",
  missed: "bg-red-50 text-red-800 ring-red-200",
  dropped_catchup: "bg-red-50 text-red-800 ring-red-200",
  refused: "bg-red-50 text-red-800 ring-red-200",
};

/** The fire ledger of one applet: every fire considered, newest first, with a filter by outcome and "Older" pages. */
export function FireLedger({ appletId, initial }: { appletId: string; initial: { items: LedgerItem[]; next_cursor: string | null } }) {
  const [outcome, setOutcome] = useState("");
  const [items, setItems] = useState(initial.items);
  const [cursor, setCursor] = useState(initial.next_cursor);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function load(nextOutcome: string, before: string | null) {
    setBusy(true);
    setError(null);
    const res = await api.api.applets[":id"].ledger.$get({ param: { id: appletId }, query: { outcome: nextOutcome || undefined, before: before ?? undefined } }).catch(() => null);
    setBusy(false);
    if (!res?.ok) {
      setError(res ? ((await errorBody(res)).error ?? `failed (${res.status})`) : "network error");
      return;
    }
    const page = (await res.json());
    setItems((prev) => (before ? [...prev, ...page.items] : page.items));
    setCursor(page.next_cursor);
  }

  return (
    <section className="card mb-4" id="ledger" data-testid="fire-ledger">
      <div className="mb-2 flex flex-wrap items-end justify-between gap-2">
        <div>
          <h2 className="text-base font-semibold">Fire ledger</h2>
          <p className="help">Every fire whenthen considered, newest first: what became of it and why. Kept as long as runs.</p>
        </div>
        <div>
          <label htmlFor="ledger-outcome" className="field-label mb-1">
            Outcome
          </label>
          <select
            id="ledger-outcome"
            className="input sm:w-48"
            value={outcome}
            onChange={(e) => {
              setOutcome(e.target.value);
              void load(e.target.value, null);
            }}
          >
            <option value="">Any</option>
            {Object.entries(OUTCOME_LABELS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {error ? (
        <p role="alert" className="text-sm text-red-800">
          {error}
        </p>
      ) : null}
      {items.length === 0 ? (
        <p className="text-sm text-slate-500">{outcome ? "No fires with this outcome." : "No fires yet."}</p>
      ) : (
        <ul className="divide-y divide-slate-100 text-sm">
          {items.map((e) => (
            <li key={e.id} className="flex flex-col gap-1 py-2 sm:flex-row sm:items-baseline sm:gap-3" data-testid="ledger-row" data-outcome={e.outcome}>
              <span className="w-44 shrink-0 text-xs text-slate-600">
                <LocalTime iso={e.at} />
              </span>
              <span className={`inline-flex w-fit shrink-0 rounded px-1.5 py-0.5 text-xs font-medium ring-1 ${TONE[e.outcome] ?? "bg-slate-50 text-slate-700 ring-slate-200"}`}>
                {OUTCOME_LABELS[e.outcome] ?? e.outcome}
                {e.count > 1 ? ` ×${e.count}` : ""}
              </span>
              <span className="min-w-0 flex-1 break-words text-slate-800">
                {e.detail || (e.outcome === "fired" ? "became a run" : "")}
                {e.dedupe_key && e.outcome === "deduplicated" ? <span className="ml-1 font-mono text-xs text-slate-500">key {e.dedupe_key}</span> : null}
              </span>
              {e.run_id ? (
                <span className="inline-flex shrink-0 items-center gap-2">
                  {e.run_status ? <StatusBadge status={e.run_status} /> : <span className="text-xs text-slate-500">run deleted</span>}
                  {e.run_status ? (
                    <Link href={`/runs/${e.run_id}`} className="text-xs text-indigo-700 hover:underline">
                      {e.outcome === "deduplicated" ? "earlier run" : "run"}
                    </Link>
                  ) : null}
                </span>
              ) : null}
            </li>
          ))}
        </ul>
      )}
      {cursor ? (
        <button type="button" className="btn-secondary mt-2" disabled={busy} onClick={() => void load(outcome, cursor)}>
          {busy ? "Loading…" : "Older"}
        </button>
      ) : null}
    </section>
  );
}
