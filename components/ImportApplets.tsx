"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";

interface ImportAnswer {
  created?: string[];
  replaced?: string[];
  error?: string;
  problems?: { path: string; message: string }[];
}

/**
 * Imports an export file (POST /api/import). Ids and webhook tokens are kept; when the server says
 * an id exists, the user is asked before it is sent again with ?overwrite=true.
 */
export function ImportApplets() {
  const router = useRouter();
  const [result, setResult] = useState<{ ok: boolean; text: string; problems?: ImportAnswer["problems"] } | null>(null);
  const [busy, setBusy] = useState(false);

  async function send(text: string, overwrite: boolean): Promise<{ status: number; body: ImportAnswer } | null> {
    const res = await fetch(`/api/import${overwrite ? "?overwrite=true" : ""}`, { method: "POST", headers: { "content-type": "application/json" }, body: text }).catch(() => null);
    return res ? { status: res.status, body: (await res.json().catch(() => ({}))) as ImportAnswer } : null;
  }

  async function onFile(file: File) {
    setBusy(true);
    setResult(null);
    const text = await file.text();
    let r = await send(text, false);
    const exists = r?.status === 400 && (r.body.problems ?? []).some((p) => /exists/.test(p.message));
    const others = (r?.body.problems ?? []).filter((p) => !/exists/.test(p.message));
    if (r && exists && others.length === 0) {
      const ids = (r.body.problems ?? []).filter((p) => /exists/.test(p.message)).length;
      if (window.confirm(`${ids} applet${ids === 1 ? "" : "s"} in this file already exist${ids === 1 ? "s" : ""} here. Replace ${ids === 1 ? "it" : "them"} with the file's version?`)) {
        r = await send(text, true);
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
