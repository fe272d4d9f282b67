"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { CopyButton } from "./CopyButton";
import { LocalTime } from "./LocalTime";

export interface TokenRow {
  id: string;
  name: string;
  prefix: string;
  read_only: boolean;
  last_used_at: string | null;
  expires_at: string | null;
  expired: boolean;
  created_at: string;
}

/** How long a new token is good for: a number of days from now, "never", or a date picked below. */
const EXPIRY_CHOICES = [
  { value: "30", label: "30 days" },
  { value: "90", label: "90 days" },
  { value: "365", label: "1 year" },
  { value: "7", label: "7 days" },
  { value: "never", label: "Never" },
  { value: "date", label: "On a date…" },
] as const;

/** The expires_at to send for a choice; null for never; undefined when the date is missing. */
function expiryOf(choice: string, date: string): string | null | undefined {
  if (choice === "never") return null;
  // The end of the picked day, on the reader's clock.
  if (choice === "date") return date ? new Date(`${date}T23:59:59`).toISOString() : undefined;
  return new Date(Date.now() + Number(choice) * 86_400_000).toISOString();
}

/** "expires …", "expired …" or "never expires", for a token's row. */
function ExpiryNote({ t, compact }: { t: TokenRow; compact?: boolean }) {
  if (!t.expires_at) return <span className="text-slate-600">never expires</span>;
  if (t.expired) {
    return (
      <span className="font-medium text-red-700">
        expired <LocalTime iso={t.expires_at} compact={compact} />
      </span>
    );
  }
  return (
    <span className="text-slate-600">
      expires <LocalTime iso={t.expires_at} compact={compact} />
    </span>
  );
}

/** Make and revoke API tokens for scripts and the CLI. A new token is shown once, here, and never again. */
export function ApiTokens({ tokens, publicUrl }: { tokens: TokenRow[]; publicUrl: string }) {
  const router = useRouter();
  const [name, setName] = useState("");
  const [readOnly, setReadOnly] = useState(false);
  const [expiry, setExpiry] = useState<string>("90");
  const [expiryDate, setExpiryDate] = useState("");
  const [made, setMade] = useState<{ name: string; token: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function create(e: React.FormEvent) {
    e.preventDefault();
    const expiresAt = expiryOf(expiry, expiryDate);
    if (expiresAt === undefined) return setError("pick the day the token stops working, or another choice");
    setBusy(true);
    setError(null);
    const res = await fetch("/api/tokens", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name, read_only: readOnly, expires_at: expiresAt }) }).catch(() => null);
    setBusy(false);
    const body = res ? ((await res.json().catch(() => ({}))) as { token?: string; name?: string; error?: string; problems?: { message: string }[] }) : null;
    if (!res?.ok || !body?.token) return setError(body?.problems?.map((p) => p.message).join("; ") || body?.error || "network error");
    setMade({ name: body.name ?? name, token: body.token });
    setName("");
    setReadOnly(false);
    router.refresh();
  }

  async function revoke(t: TokenRow) {
    if (!window.confirm(`Revoke “${t.name}”? Scripts using it get 401 from now on. This cannot be undone.`)) return;
    const res = await fetch(`/api/tokens/${encodeURIComponent(t.id)}`, { method: "DELETE" }).catch(() => null);
    if (!res?.ok) return setError(res ? `revoke failed (${res.status})` : "network error");
    if (made && t.name === made.name) setMade(null);
    router.refresh();
  }

  return (
    <div className="flex flex-col gap-3" data-testid="api-tokens">
      {made ? <NewTokenNotice made={made} publicUrl={publicUrl} /> : null}
      {tokens.length ? (
        <table className="w-full divide-y divide-slate-200 text-sm">
          <thead>
            <tr>
              <th className="th pl-0">Name</th>
              <th className="th hidden sm:table-cell">Token</th>
              <th className="th hidden sm:table-cell">Last used</th>
              <th className="th hidden sm:table-cell">Expires</th>
              <th className="th">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-100">
            {tokens.map((t) => (
              <TokenRowView key={t.id} t={t} onRevoke={() => void revoke(t)} />
            ))}
          </tbody>
        </table>
      ) : (
        <p className="text-sm text-slate-600">No API tokens. A token lets a script or the CLI use the API without signing in.</p>
      )}
      {tokens.length ? (
        <p className="text-xs text-slate-600">Last use is recorded at most once a minute per token. An expired token is refused (401, saying it expired) and stays listed until you revoke it.</p>
      ) : null}
      <form onSubmit={(e) => void create(e)} className="flex flex-wrap items-end gap-2">
        <label className="flex min-w-0 flex-1 basis-56 flex-col gap-1 text-sm">
          <span className="text-slate-700">New token&rsquo;s name</span>
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="CLI on my laptop" maxLength={80} className="input" />
        </label>
        <label className="flex flex-col gap-1 text-sm">
          <span className="text-slate-700">Expires</span>
          <select value={expiry} onChange={(e) => setExpiry(e.target.value)} className="input w-auto" data-testid="token-expiry">
            {EXPIRY_CHOICES.map((c) => (
              <option key={c.value} value={c.value}>
                {c.value === "never" || c.value === "date" ? c.label : `in ${c.label}`}
              </option>
            ))}
          </select>
        </label>
        {expiry === "date" ? (
          <label className="flex flex-col gap-1 text-sm">
            <span className="text-slate-700">Last day it works</span>
            <input type="date" value={expiryDate} onChange={(e) => setExpiryDate(e.target.value)} className="input w-auto" data-testid="token-expiry-date" />
          </label>
        ) : null}
        <label className="flex items-center gap-2 pb-2 text-sm text-slate-700">
          <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.target.checked)} />
          Read-only
        </label>
        <button type="submit" className="btn-primary" disabled={busy || !name.trim()}>
          Make token
        </button>
      </form>
      {error ? (
        <p role="alert" className="text-sm text-red-700">
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** A token just made: shown once, with how to use it. */
function NewTokenNotice({ made, publicUrl }: { made: { name: string; token: string }; publicUrl: string }) {
  return (
    <div role="status" className="rounded border border-green-300 bg-green-50 p-3 text-sm text-green-900">
      <p className="font-medium">Token “{made.name}” made. Copy it now: it is not stored and will not be shown again.</p>
      <p className="mt-2 flex flex-wrap items-center gap-2">
        <span className="code break-all" data-testid="new-token">
          {made.token}
        </span>
        <CopyButton text={made.token} />
      </p>
      <p className="mt-2 break-words text-green-800">
        Use it as <span className="code break-all">{`curl -H "Authorization: Bearer ${made.token.slice(0, 9)}…" ${publicUrl}/api/applets`}</span> or with the CLI:{" "}
        <span className="code break-all">{`WHENTHEN_URL=${publicUrl} WHENTHEN_TOKEN=… pnpm whenthen applets list`}</span> (or put it in a file only you can read: <span className="code break-all">--token-file</span>)
      </p>
    </div>
  );
}

function TokenRowView({ t, onRevoke }: { t: TokenRow; onRevoke: () => void }) {
  return (
    <tr data-testid={`token-${t.name}`}>
      <td className="td pl-0">
        <span className="break-words">{t.name}</span>
        {t.read_only ? <span className="ml-2 rounded bg-slate-100 px-1.5 py-0.5 text-xs text-slate-700">read-only</span> : null}
        {t.expired ? <span className="ml-2 rounded bg-red-50 px-1.5 py-0.5 text-xs text-red-800 ring-1 ring-red-200">expired</span> : null}
        <span className="mt-0.5 block text-xs text-slate-600 sm:hidden">
          <span className="code">{t.prefix}…</span> · {t.last_used_at ? <>used <LocalTime iso={t.last_used_at} compact /></> : "never used"} · <ExpiryNote t={t} compact />
        </span>
      </td>
      <td className="td hidden sm:table-cell">
        <span className="code">{t.prefix}…</span>
      </td>
      <td className="td hidden text-slate-600 sm:table-cell">{t.last_used_at ? <LocalTime iso={t.last_used_at} /> : "never"}</td>
      <td className="td hidden text-slate-600 sm:table-cell">{!t.expires_at ? "never" : t.expired ? <ExpiryNote t={t} /> : <LocalTime iso={t.expires_at} />}</td>
      <td className="td pr-0 text-right">
        <button type="button" className="btn-danger" onClick={onRevoke}>
          Revoke
        </button>
      </td>
    </tr>
  );
}
