"use client";
import { api, errorBody, type ApiError, type InferResponseType } from "@/lib/ui/api-client";
import { useRouter } from "next/navigation";
import { useState } from "react";

type ImportAnswer = Partial<InferResponseType<typeof api.api.import.$post, 200> & ApiError>;

/**
 * Imports an export file (POST /api/import). Ids and webhook tokens are kept; when the server says
 * an id exists, the user is asked before it is sent again with ?overwrite=true.
 */
export function ImportApplets() {
  const router = useRouter();
  const [result, setResult] = useState<{ ok: boolean; text: string; problems?: ImportAnswer["problems"] } | null>(null);
  const [busy, setBusy] = useState(false);

  async function send(items: unknown[], overwrite: boolean): Promise<{ status: number; body: ImportAnswer } | null> {
    const res = await api.api.import.$post({ json: items, query: overwrite ? { overwrite: "true" } : {} }).catch(() => null);
    if (!res) return null;
    return { status: res.status, body: res.ok ? await res.json() : await errorBody(res) };
  }

  async function onFile(file: File) {
    setBusy(true);
    setResult(null);
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
    let r = await send(items, false);
    const exists = r?.status === 400 && (r.body.problems ?? []).some((p) => /exists/.test(p.message));
    const others = (r?.body.problems ?? []).filter((p) => !/exists/.test(p.message));
    if (r && exists && others.length === 0) {
      const ids = (r.body.problems ?? []).filter((p) => /exists/.test(p.message)).length;
      if (window.confirm(`${ids} applet${ids === 1 ? "" : "s"} in this file already exist${ids === 1 ? "s" : ""} here. Replace ${ids === 1 ? "it" : "them"} with the file's version?`)) {
        r = await send(items, true);
      } else {
        setBusy(false);
        return setResult({ ok: false, text: "Nothing was imported." });
      }
    }
    setBusy(false);
    if (!r) return setResult({ ok: false, text: "network error: nothing was imported" });
    if (r.status !== 200) return setResult({ ok: false, text: r.body.error ?? `import failed (${r.status})`, problems: r.body.problems });
    setResult({ ok: true, text: `Imported: ${r.body.created?.length ?? 0} new, ${r.body.replaced?.length ?? 0} replaced.` });
    router.refresh();
  }

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
