"use client";
import { useState } from "react";
import { fetchedItemsSummary, pretty } from "@/lib/ui/format";
import type { FieldMeta } from "@/lib/plugin";
import { fetchTrigger } from "./api";

interface FetchState {
  busy: boolean;
  error?: string;
  result?: unknown;
}

/**
 * "Fetch now" for RSS and poll, "Test connection" for IMAP and MQTT: runs the trigger's preview
 * without saving, to check the URL and path, or the server, the sign-in and the mailbox or topic.
 */
export function FetchNow({ type, label = "Fetch now", fields, config, onItems }: { type: string; label?: string; fields: FieldMeta[]; config: Record<string, unknown>; onItems?: (items: Record<string, unknown>[]) => void }) {
  const [state, setState] = useState<FetchState>({ busy: false });
  async function run() {
    setState({ busy: true });
    const answer = await fetchTrigger(type, fields, config);
    setState(answer.ok ? { busy: false, result: answer.value } : { busy: false, error: answer.error });
    // A feed's items become samples to test with: the item as an event would carry it.
    if (answer.ok) onItems?.(fetchedSamples(answer.value));
  }
  return (
    <div className="flex flex-col gap-2">
      <div>
        <button type="button" className="btn-secondary" onClick={() => void run()} disabled={state.busy}>
          {state.busy ? (label === "Fetch now" ? "Fetching…" : "Connecting…") : label}
        </button>
      </div>
      {state.error ? (
        <p className="rounded-md bg-red-50 p-2 text-sm break-words text-red-800 ring-1 ring-red-200" role="alert" data-testid="fetch-error">
          {state.error}
        </p>
      ) : null}
      {state.result !== undefined ? <FetchResult result={state.result} /> : null}
    </div>
  );
}

function FetchResult({ result }: { result: unknown }) {
  const r = (result && typeof result === "object" ? result : {}) as Record<string, unknown>;
  if (r.connected === true) return <ConnectionResult r={r} />;
  if (Array.isArray(r.items)) {
    const items = r.items.slice(0, 3) as Record<string, unknown>[];
    return (
      <div className="rounded-md bg-slate-50 p-3 text-sm ring-1 ring-slate-200" data-testid="fetch-result">
        <p className="mb-2 text-xs text-slate-600">
          {typeof r.feed_title === "string" ? `${r.feed_title}: ` : ""}
          {fetchedItemsSummary(typeof r.item_count === "number" ? r.item_count : r.items.length, items.length)}
        </p>
        <ol className="flex list-decimal flex-col gap-2 pl-5">
          {items.map((it, i) => (
            <li key={i}>
              <p className="font-medium">{typeof it.title === "string" ? it.title : "(no title)"}</p>
              {typeof it.link === "string" ? <p className="truncate text-xs text-slate-600">{it.link}</p> : null}
              {typeof it.published_at === "string" ? <p className="text-xs text-slate-500">{it.published_at}</p> : null}
            </li>
          ))}
        </ol>
      </div>
    );
  }
  if ("value" in r) {
    return (
      <div className="rounded-md bg-slate-50 p-3 text-sm ring-1 ring-slate-200" data-testid="fetch-result">
        <p className="text-xs text-slate-600">Extracted value{typeof r.path === "string" ? ` at ${r.path}` : ""}{typeof r.status === "number" ? ` (HTTP ${r.status})` : ""}:</p>
        <pre className="pre mt-1">{pretty(r.value)}</pre>
        {typeof r.condition_holds_now === "boolean" ? (
          <p className="mt-1 text-xs text-slate-600">{r.condition_holds_now ? "The condition holds now (it fires when it becomes true, not while it stays true)." : "The condition does not hold now."}</p>
        ) : null}
      </div>
    );
  }
  return <pre className="pre" data-testid="fetch-result">{pretty(result)}</pre>;
}

/** "Test connection" worked: what the server said, and the newest mail or retained messages it holds. */
function ConnectionResult({ r }: { r: Record<string, unknown> }) {
  const items = (Array.isArray(r.items) ? r.items : []) as Record<string, unknown>[];
  return (
    <div className="rounded-md bg-emerald-50 p-3 text-sm text-emerald-900 ring-1 ring-emerald-200" data-testid="fetch-result">
      <p className="break-words">{typeof r.summary === "string" ? r.summary : "Connected."}</p>
      {items.length ? (
        <ol className="mt-2 flex list-decimal flex-col gap-1 pl-5 text-slate-800">
          {items.map((it, i) => (
            <li key={i} className="min-w-0">
              <p className="truncate font-medium">{typeof it.title === "string" && it.title ? it.title : "(no subject)"}</p>
              <p className="truncate text-xs text-slate-600">{typeof it.from === "string" ? it.from : typeof it.payload_text === "string" ? it.payload_text : ""}</p>
            </li>
          ))}
        </ol>
      ) : null}
    </div>
  );
}

/** The items of a "Fetch now" answer as event payloads (without the dedupe key the fetch adds). */
export function fetchedSamples(result: unknown): Record<string, unknown>[] {
  const items = result && typeof result === "object" ? (result as { items?: unknown }).items : undefined;
  if (!Array.isArray(items)) return [];
  return items.filter((i): i is Record<string, unknown> => Boolean(i) && typeof i === "object").map(({ key: _key, ...payload }) => payload);
}
