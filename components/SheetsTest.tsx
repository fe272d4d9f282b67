"use client";
import { useState } from "react";
import { api, type InferResponseType } from "@/lib/ui/api-client";

type Result = InferResponseType<(typeof api.api.settings)["sheets-test"]["$post"], 200>;

/** Settings → Google Sheets: reads a sheet's title with the service account, before an applet needs it. */
export function SheetsTest() {
  const [sheet, setSheet] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Result | null>(null);

  async function test(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setResult(null);
    const res = await api.api.settings["sheets-test"].$post({ json: { spreadsheet: sheet } }).catch(() => null);
    setResult(res?.ok ? await res.json() : { ok: false, error: `the request failed${res ? ` (${res.status})` : ""}` });
    setBusy(false);
  }

  return (
    <form onSubmit={test} className="mt-3 space-y-2">
      <label className="block text-sm text-slate-700" htmlFor="sheets-test-id">
        Test access to a spreadsheet (id or URL)
      </label>
      <div className="flex gap-2">
        <input
          id="sheets-test-id"
          className="input flex-1"
          value={sheet}
          onChange={(e) => setSheet(e.target.value)}
          placeholder="https://docs.google.com/spreadsheets/d/…/edit"
        />
        <button type="submit" className="btn-secondary" disabled={busy || !sheet.trim()}>
          {busy ? "Testing…" : "Test"}
        </button>
      </div>
      {result &&
        (result.ok ? (
          <p className="text-sm text-green-800" role="status">
            Readable: “{result.title}”.
          </p>
        ) : (
          <p className="text-sm text-red-800" role="alert">
            {result.error}
          </p>
        ))}
    </form>
  );
}
