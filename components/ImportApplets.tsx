"use client";
import { api, errorBody, type ApiError, type InferResponseType } from "@/lib/ui/api-client";
import { useRouter } from "next/navigation";
import { useState } from "react";

type ImportAnswer = Partial<InferResponseType<typeof api.api.import.$post, 200> & ApiError>;

/** An applet in the file whose id exists here: the user decides, one by one, whether it replaces. */
interface Conflict {
  id: string;
  name: string;
  replace: boolean;
}

const EXISTS = /exists; import with overwrite/;

/**
 * Imports an export file (POST /api/import). Ids and webhook tokens are kept. When some ids exist
 * here, the new applets are imported anyway and each existing one is asked about: left as it is
 * (the default, ?existing=skip) or replaced by the file's version (?replace=id,…).
 */
export function ImportApplets() {
  const router = useRouter();
  const [result, setResult] = useState<{ ok: boolean; text: string; problems?: ImportAnswer["problems"] } | null>(null);
  const [busy, setBusy] = useState(false);
  const [pending, setPending] = useState<{ items: unknown[]; conflicts: Conflict[] } | null>(null);

  async function send(items: unknown[], query: { existing?: "skip"; replace?: string }): Promise<{ status: number; body: ImportAnswer } | null> {
    const res = await api.api.import.$post({ json: items, query }).catch(() => null);
    if (!res) return null;
    return { status: res.status, body: res.ok ? await res.json() : await errorBody(res) };
  }

  function report(r: { status: number; body: ImportAnswer } | null) {
    if (!r) return setResult({ ok: false, text: "network error: nothing was imported" });
    if (r.status !== 200) return setResult({ ok: false, text: r.body.error ?? `import failed (${r.status})`, problems: r.body.problems });
    const skipped = r.body.skipped?.length ?? 0;
    setResult({ ok: true, text: `Imported: ${r.body.created?.length ?? 0} new, ${r.body.replaced?.length ?? 0} replaced${skipped ? `, ${skipped} existing left as they were` : ""}.` });
    router.refresh();
  }

  async function onFile(file: File) {
    setBusy(true);
    setResult(null);
    setPending(null);
    let items: unknown;
    try {
      items = JSON.parse(await file.text()) as unknown;
    } catch (err) {
      setBusy(false);
      return setResult({ ok: false, text: `${file.name} is not a JSON file: ${(err as Error).message}` });
    }
    if (!Array.isArray(items)) {
      setBusy(false);
      return setResult({ ok: false, text: `${file.name} is not an export file: it should hold a JSON array of applets, as Export JSON writes it.` });
    }
    const list: unknown[] = items;
    const r = await send(list, {});
    setBusy(false);
    const problems = r?.body.problems ?? [];
    const existing = problems.filter((p) => EXISTS.test(p.message));
    if (r?.status === 400 && existing.length && existing.length === problems.length) {
      const conflicts = existing.map((p): Conflict => {
        const item = (list[Number(p.path.split(".")[0])] ?? {}) as { id?: unknown; name?: unknown };
        const id = typeof item.id === "string" ? item.id : "";
        return { id, name: typeof item.name === "string" ? item.name : id, replace: false };
      });
      return setPending({ items: list, conflicts });
    }
    report(r);
  }

  async function confirm() {
    if (!pending) return;
    setBusy(true);
    const replace = pending.conflicts.filter((c) => c.replace).map((c) => c.id);
    const r = await send(pending.items, replace.length ? { existing: "skip", replace: replace.join(",") } : { existing: "skip" });
    setBusy(false);
    setPending(null);
    report(r);
  }

  const fresh = pending ? pending.items.length - pending.conflicts.length : 0;
  return (
    <div className="flex flex-col gap-2">
      <label className="btn-secondary w-fit cursor-pointer">
        {busy ? "Importing…" : "Import applets…"}
        <input
          type="file"
          accept="application/json,.json"
          className="sr-only"
          disabled={busy}
          onChange={(e) => {
            const f = e.target.files?.[0];
            e.target.value = "";
            if (f) void onFile(f);
          }}
        />
      </label>
      {pending ? (
        <div className="rounded-md bg-amber-50 p-3 text-sm text-amber-950 ring-1 ring-amber-200" data-testid="import-conflicts">
          <p className="font-medium">
            {fresh} new applet{fresh === 1 ? "" : "s"} in this file; {pending.conflicts.length} already exist{pending.conflicts.length === 1 ? "s" : ""} here. Tick the ones the file&apos;s version should replace; the others stay as they are.
          </p>
          <ul className="mt-2 flex flex-col gap-1">
            {pending.conflicts.map((c, i) => (
              <li key={c.id}>
                <label className="flex items-center gap-2">
                  <input
                    type="checkbox"
                    checked={c.replace}
                    onChange={(e) => setPending({ ...pending, conflicts: pending.conflicts.map((x, j) => (j === i ? { ...x, replace: e.target.checked } : x)) })}
                    className="h-4 w-4"
                  />
                  Replace <span className="font-medium break-all">{c.name}</span>
                </label>
              </li>
            ))}
          </ul>
          <div className="mt-3 flex flex-wrap gap-2">
            <button type="button" className="btn-primary" onClick={() => void confirm()} disabled={busy}>
              Import {fresh} new{pending.conflicts.some((c) => c.replace) ? `, replace ${pending.conflicts.filter((c) => c.replace).length}` : ""}
            </button>
            <button type="button" className="btn-secondary" onClick={() => (setPending(null), setResult({ ok: false, text: "Nothing was imported." }))}>
              Cancel
            </button>
          </div>
        </div>
      ) : null}
      {result ? (
        <div className={`rounded-md p-2 text-sm ring-1 ${result.ok ? "bg-green-50 text-green-900 ring-green-200" : "bg-red-50 text-red-900 ring-red-200"}`} role="status">
          <p>{result.text}</p>
          {result.problems?.length ? (
            <ul className="mt-1 list-disc pl-5 text-xs">
              {result.problems.map((p, i) => (
                <li key={i}>
                  <span className="font-mono">{p.path}</span>: {p.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
