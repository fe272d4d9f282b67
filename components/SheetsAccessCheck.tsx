"use client";
import { useState } from "react";
import { api, type InferResponseType } from "@/lib/ui/api-client";

type Result = InferResponseType<(typeof api.api.settings)["sheets-test"]["$post"], 200>;

/** Settings → Google Sheets: reads a sheet's title with the service account, before an applet needs it. */
export function SheetsAccessCheck() {
  const [sheet, setSheet] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Result | null>(null);

  async function test(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setResult(null);
    const res = await api.api.settings["sheets-test"].$post({ json: { spreadsheet: sheet } }).catch(() => null);
    // An answer that is not JSON (a proxy's error page) must not leave the form busy for good.
    const body = res?.ok ? await res.json().catch(() => null) : null;
    setResult(body ?? { ok: false, error: res?.ok ? "the answer was not JSON" : `the request failed${res ? ` (${res.status})` : ""}` });
    setBusy(false);
  }

  return (
    <form onSubmit={(e) => void test(e)} className="mt-3 space-y-2">
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
