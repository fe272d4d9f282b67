"use client";
import { useRouter } from "next/navigation";
import { Fragment, useState } from "react";
import { tokenBreaks } from "@/lib/ui/format";
import { LocalTime } from "./LocalTime";
import { api, errorBody, type InferResponseType } from "@/lib/ui/api-client";

type SecretRow = InferResponseType<typeof api.api.secrets.$get, 200>["secrets"][number];

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
    const res = await api.api.secrets.$post({ json: { name: n, value: v } }).catch(() => null);
    setBusy(false);
    if (!res?.ok) {
      const body = res ? await errorBody(res) : null;
      setError(body?.problems?.map((p) => p.message).join("; ") || body?.error || "network error");
      return false;
    }
    router.refresh();
    return true;
  }

  const newName = name.trim();
  const exists = secrets.some((s) => s.name === newName);

  async function add(e: React.FormEvent) {
    e.preventDefault();
    // The API's POST is an upsert: adding a name that exists would silently replace a value that
    // cannot be read back. Say so first.
    if (exists && !window.confirm(`${newName} exists; replace its value? Applets that use {{secrets.${newName}}} get the new value from their next run. The old value cannot be recovered.`)) return;
    if (await put(newName, value)) {
      setName("");
      setValue("");
    }
  }

  async function remove(n: string) {
    if (!window.confirm(`Delete the secret ${n}? Applets that use {{secrets.${n}}} will render it as empty.`)) return;
    const res = await api.api.secrets[":name"].$delete({ param: { name: n } }).catch(() => null);
    if (!res?.ok) return setError(res ? `delete failed (${res.status})` : "network error");
    router.refresh();
  }

  return (
    <div className="flex flex-col gap-3">
      {secrets.length ? (
        <table className="w-full divide-y divide-slate-200 text-sm">
          <thead>
            <tr>
              <th className="th pl-0">Name</th>
              <th className="th hidden sm:table-cell">Use as</th>
              <th className="th hidden sm:table-cell">Last set</th>
              <th className="th">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-100">
            {secrets.map((s) => (
              <SecretRowView
                key={s.name}
                s={s}
                rotating={rotating === s.name}
                onToggleRotate={() => {
                  setRotating(rotating === s.name ? null : s.name);
                  setRotateValue("");
                }}
                onRemove={() => void remove(s.name)}
                rotateValue={rotateValue}
                setRotateValue={setRotateValue}
                busy={busy}
                onRotate={() =>
                  void put(s.name, rotateValue).then((saved) => {
                    if (!saved) return;
                    setRotating(null);
                    setRotateValue("");
                  })
                }
                onCancel={() => setRotating(null)}
              />
            ))}
          </tbody>
        </table>
      ) : (
        <p className="text-sm text-slate-600">No secrets yet. Store webhook URLs and API tokens here and use them in any field as {"{{secrets.NAME}}"}.</p>
      )}
      <form onSubmit={(e) => void add(e)} className="flex flex-wrap items-end gap-2 border-t border-slate-100 pt-3">
        <div className="w-full sm:w-56">
          <label htmlFor="secret-name" className="field-label mb-1">
            Name
          </label>
          <input id="secret-name" value={name} onChange={(e) => setName(e.target.value.toUpperCase())} placeholder="SLACK_WEBHOOK" pattern="[A-Z0-9_]+" title="A–Z, 0–9 and _" aria-describedby={exists ? "secret-exists" : undefined} className="input font-mono" />
        </div>
        <div className="w-full sm:w-72">
          <label htmlFor="secret-value" className="field-label mb-1">
            Value
          </label>
          <input id="secret-value" type="password" autoComplete="new-password" value={value} onChange={(e) => setValue(e.target.value)} className="input" />
        </div>
        <button type="submit" className="btn-primary" disabled={busy || !newName || !value}>
          {exists ? "Replace value" : "Add secret"}
        </button>
        {exists ? (
          <p id="secret-exists" className="w-full text-xs text-amber-800">
            {newName} already exists: saving replaces its value (the same as Rotate).
          </p>
        ) : null}
      </form>
      {error ? <p className="text-sm text-red-700">{error}</p> : null}
    </div>
  );
}

/** A secret's row, and under it the form for its new value while it is being rotated. */
function SecretRowView({
  s,
  rotating,
  onToggleRotate,
  onRemove,
  rotateValue,
  setRotateValue,
  busy,
  onRotate,
  onCancel,
}: {
  s: SecretRow;
  rotating: boolean;
  onToggleRotate: () => void;
  onRemove: () => void;
  rotateValue: string;
  setRotateValue: (v: string) => void;
  busy: boolean;
  onRotate: () => void;
  onCancel: () => void;
}) {
  return (
    <>
      <tr>
        <td className="td pl-0">
          <span className="font-mono break-words" data-testid="secret-name">
            <Breakable text={s.name} />
          </span>
          {/* On a phone the other columns fold in under the name. */}
          <span className="mt-0.5 block text-xs text-slate-600 sm:hidden">
            <span className="code break-words">
              <Breakable text={`{{secrets.${s.name}}}`} />
            </span>
            <span className="mt-0.5 block">
              set <LocalTime iso={s.updated_at} compact />
            </span>
          </span>
        </td>
        <td className="td hidden sm:table-cell">
          <span className="code">{`{{secrets.${s.name}}}`}</span>
        </td>
        <td className="td hidden text-slate-600 sm:table-cell">
          <LocalTime iso={s.updated_at} />
        </td>
        <td className="td pr-0 text-right">
          <span className="inline-flex flex-wrap justify-end gap-2">
            <button type="button" className="btn-secondary" onClick={onToggleRotate} aria-expanded={rotating}>
              Rotate
            </button>
            <button type="button" className="btn-danger" onClick={onRemove}>
              Delete
            </button>
          </span>
        </td>
      </tr>
      {rotating ? (
        <tr>
          <td colSpan={4} className="td px-0">
            <form
              className="flex flex-wrap items-center gap-2"
              onSubmit={(e) => {
                e.preventDefault();
                onRotate();
              }}
            >
              <label htmlFor={`rotate-${s.name}`} className="text-sm text-slate-700">
                New value for <span className="font-mono">{s.name}</span>
              </label>
              <input id={`rotate-${s.name}`} type="password" autoFocus autoComplete="new-password" value={rotateValue} onChange={(e) => setRotateValue(e.target.value)} className="input min-w-0 flex-1 basis-48" />
              <span className="flex gap-2">
                <button type="submit" className="btn-primary" disabled={busy || !rotateValue}>
                  Save
                </button>
                <button type="button" className="btn-secondary" onClick={onCancel}>
                  Cancel
                </button>
              </span>
            </form>
          </td>
        </tr>
      ) : null}
    </>
  );
}

/** A token that breaks only after its `_` and `.`, never in the middle of a word. */
function Breakable({ text }: { text: string }) {
  return (
    <>
      {tokenBreaks(text).map((part, i) => (
        <Fragment key={i}>
          {i > 0 ? <wbr /> : null}
          {part}
        </Fragment>
      ))}
    </>
  );
}
