"use client";
import { useState } from "react";
import { pretty } from "@/lib/ui/format";
import type { Meta } from "@/lib/ui/types";
import type { FormConfig } from "./fields";

/** The email trigger's full inbound address, and on a laptop the command that delivers a test mail. */
export function EmailAddressHint({ meta, cfg }: { meta: Meta; cfg: FormConfig }) {
  const alias = typeof cfg.to_alias === "string" && cfg.to_alias.trim() ? cfg.to_alias.trim().toLowerCase() : null;
  const domain = meta.inbound_domain;
  const address = `${alias ?? "anything"}@${domain}`;
  const local = domain === "localhost" || domain.endsWith(".localhost") || domain.endsWith(".local");
  return (
    <div className="rounded-md bg-slate-50 p-3 text-sm ring-1 ring-slate-200" data-testid="email-address">
      <p>
        Mail to <span className="code">{alias ? address : `*@${domain}`}</span> {alias ? `(or ${alias}+anything@${domain})` : "(no alias: every address at the domain)"} fires this applet.
      </p>
      {local ? (
        <p className="mt-2 text-xs text-slate-600">
          On this machine, send a test mail with{" "}
          <span className="code select-all">
            swaks --server localhost:{meta.smtp_inbound_port} --to {alias ?? "test"}@{domain} --header &quot;Subject: Hello&quot;
          </span>
        </p>
      ) : null}
    </div>
  );
}

interface FetchState {
  busy: boolean;
  error?: string;
  result?: unknown;
}

/** "Fetch now" for RSS and poll: runs the trigger's fetch without saving, to check the URL and path. */
export function FetchNow({ type, config }: { type: string; config: Record<string, unknown> }) {
  const [state, setState] = useState<FetchState>({ busy: false });
  async function run() {
    setState({ busy: true });
    const res = await fetch("/api/triggers/fetch", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type, config }) }).catch(() => null);
    if (!res) return setState({ busy: false, error: "network error" });
    const body = (await res.json().catch(() => ({}))) as { ok?: boolean; result?: unknown; error?: string; problems?: { path: string; message: string }[] };
    if (res.status === 400) return setState({ busy: false, error: (body.problems ?? []).map((p) => `${p.path.replace(/^config\./, "")}: ${p.message}`).join("; ") || body.error || "invalid config" });
    if (!res.ok || body.ok === false) return setState({ busy: false, error: body.error ?? `failed (${res.status})` });
    setState({ busy: false, result: body.result });
  }
  return (
    <div className="flex flex-col gap-2">
      <div>
        <button type="button" className="btn-secondary" onClick={run} disabled={state.busy}>
          {state.busy ? "Fetching…" : "Fetch now"}
        </button>
      </div>
      {state.error ? <p className="rounded-md bg-red-50 p-2 text-sm text-red-800 ring-1 ring-red-200">{state.error}</p> : null}
      {state.result !== undefined ? <FetchResult result={state.result} /> : null}
    </div>
  );
}

function FetchResult({ result }: { result: unknown }) {
  const r = (result && typeof result === "object" ? result : {}) as Record<string, unknown>;
  if (Array.isArray(r.items)) {
    const items = r.items.slice(0, 3) as Record<string, unknown>[];
    return (
      <div className="rounded-md bg-slate-50 p-3 text-sm ring-1 ring-slate-200" data-testid="fetch-result">
        <p className="mb-2 text-xs text-slate-600">
          {typeof r.feed_title === "string" ? `${r.feed_title}: ` : ""}
          {typeof r.item_count === "number" ? r.item_count : r.items.length} item{(typeof r.item_count === "number" ? r.item_count : r.items.length) === 1 ? "" : "s"} in the feed
          {items.length ? "; the first three:" : "."}
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
