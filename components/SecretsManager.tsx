"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { LocalTime } from "./LocalTime";

interface SecretRow {
  name: string;
  created_at: string;
  updated_at: string;
}

/** Add, rotate and delete secrets. Values go to the server once and are never shown again. */
export function SecretsManager({ secrets }: { secrets: SecretRow[] }) {
  const router = useRouter();
  const [name, setName] = useState("");
  const [value, setValue] = useState("");
  const [rotating, setRotating] = useState<string | null>(null);
  const [rotateValue, setRotateValue] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function put(n: string, v: string): Promise<boolean> {
    setBusy(true);
    setError(null);
    const res = await fetch("/api/secrets", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: n, value: v }) }).catch(() => null);
    setBusy(false);
    if (!res?.ok) {
      const body = res ? ((await res.json().catch(() => ({}))) as { error?: string; problems?: { message: string }[] }) : null;
      setError(body?.problems?.map((p) => p.message).join("; ") || body?.error || "network error");
      return false;
    }
    router.refresh();
    return true;
  }

  async function add(e: React.FormEvent) {
    e.preventDefault();
    if (await put(name.trim(), value)) {
      setName("");
      setValue("");
    }
  }

  async function remove(n: string) {
    if (!window.confirm(`Delete the secret ${n}? Applets that use {{secrets.${n}}} will render it as empty.`)) return;
    const res = await fetch(`/api/secrets/${encodeURIComponent(n)}`, { method: "DELETE" }).catch(() => null);
    if (!res?.ok) return setError(res ? `delete failed (${res.status})` : "network error");
    router.refresh();
  }

  return (
    <div className="flex flex-col gap-3">
      {secrets.length ? (
        <table className="min-w-full divide-y divide-slate-200 text-sm">
          <thead>
            <tr>
              <th className="th pl-0">Name</th>
              <th className="th">Use as</th>
              <th className="th">Last set</th>
              <th className="th" />
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-100">
            {secrets.map((s) => (
              <tr key={s.name}>
                <td className="td pl-0 font-mono">{s.name}</td>
                <td className="td">
                  <span className="code">{`{{secrets.${s.name}}}`}</span>
                </td>
                <td className="td text-slate-600">
                  <LocalTime iso={s.updated_at} />
                </td>
                <td className="td text-right whitespace-nowrap">
                  {rotating === s.name ? (
                    <form
                      className="inline-flex items-center gap-2"
                      onSubmit={async (e) => {
                        e.preventDefault();
                        if (await put(s.name, rotateValue)) {
                          setRotating(null);
                          setRotateValue("");
                        }
                      }}
                    >
                      <input type="password" autoFocus autoComplete="new-password" aria-label={`New value for ${s.name}`} value={rotateValue} onChange={(e) => setRotateValue(e.target.value)} className="input w-56" />
                      <button type="submit" className="btn-primary" disabled={busy || !rotateValue}>
                        Save
                      </button>
                      <button type="button" className="btn-secondary" onClick={() => setRotating(null)}>
                        Cancel
                      </button>
                    </form>
                  ) : (
                    <span className="inline-flex gap-2">
                      <button type="button" className="btn-secondary" onClick={() => setRotating(s.name)}>
                        Rotate
                      </button>
                      <button type="button" className="btn-danger" onClick={() => remove(s.name)}>
                        Delete
                      </button>
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="text-sm text-slate-600">No secrets yet. Store webhook URLs and API tokens here and use them in any field as {"{{secrets.NAME}}"}.</p>
      )}
      <form onSubmit={add} className="flex flex-wrap items-end gap-2 border-t border-slate-100 pt-3">
        <div>
          <label htmlFor="secret-name" className="field-label mb-1">
            Name
          </label>
          <input id="secret-name" value={name} onChange={(e) => setName(e.target.value.toUpperCase())} placeholder="SLACK_WEBHOOK" pattern="[A-Z0-9_]+" title="A–Z, 0–9 and _" className="input w-56 font-mono" />
        </div>
        <div>
          <label htmlFor="secret-value" className="field-label mb-1">
            Value
          </label>
          <input id="secret-value" type="password" autoComplete="new-password" value={value} onChange={(e) => setValue(e.target.value)} className="input w-72" />
        </div>
        <button type="submit" className="btn-primary" disabled={busy || !name.trim() || !value}>
          Add secret
        </button>
      </form>
      {error ? <p className="text-sm text-red-700">{error}</p> : null}
    </div>
  );
}
