"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { LocalTime } from "@/components/LocalTime";
import { api, errorBody } from "@/lib/ui/api-client";

export interface ActivityProps {
  appletId: string;
  expectEveryHours: number | null;
  quiet: string | null;
  polled: boolean;
  nextFires: string[];
  /** The zone the schedule is read in (UTC for an interval). */
  zone: string | null;
  /** The next fire times written in `zone` (rendered by the server, which knows the zone's rules). */
  nextFiresInZone: string[];
}

/** Expected activity: the quiet notice, the user's "at least one event every N hours", and a polled trigger's next five fire times. */
export function ExpectedActivity(p: ActivityProps) {
  const router = useRouter();
  const [hours, setHours] = useState(p.expectEveryHours === null ? "" : String(p.expectEveryHours));
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);

  async function save(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setStatus(null);
    const value = hours.trim() === "" ? null : Number(hours);
    const res = await api.api.applets[":id"].activity.$put({ param: { id: p.appletId }, json: { expect_every_hours: value } }).catch(() => null);
    setBusy(false);
    if (res?.ok) {
      setStatus({ ok: true, text: "Saved." });
      router.refresh();
      return;
    }
    const body = res ? await errorBody(res) : {};
    setStatus({ ok: false, text: body.error ?? (res ? `failed (${res.status})` : "network error") });
  }

  return (
    <div className="flex flex-col gap-3 text-sm" data-testid="expected-activity">
      {p.quiet ? (
        <div role="status" className="rounded-md bg-amber-50 p-3 text-amber-900 ring-1 ring-amber-200" data-testid="quiet-banner">
          <p className="font-semibold">Quiet</p>
          <p className="mt-1">{p.quiet}</p>
        </div>
      ) : null}
      <form onSubmit={(e) => void save(e)} className="flex flex-wrap items-end gap-3" aria-label="Expected activity">
        <div>
          <label htmlFor="expect-hours" className="field-label mb-1">
            Expect at least one event every (hours)
          </label>
          <input id="expect-hours" className="input w-40" inputMode="decimal" placeholder={p.polled ? "from its timing" : "no expectation"} value={hours} onChange={(e) => setHours(e.target.value)} />
        </div>
        <button type="submit" className="btn-secondary" disabled={busy}>
          {busy ? "Saving…" : "Save"}
        </button>
        {status ? (
          <span role={status.ok ? "status" : "alert"} className={status.ok ? "text-green-800" : "text-red-800"}>
            {status.text}
          </span>
        ) : null}
      </form>
      <p className="help">
        {p.polled
          ? "A schedule or a polled trigger is quiet when a fire time or check passes 15 minutes without being taken. Set hours to also expect events (a feed that should keep publishing)."
          : "When no event comes for longer, the alert channel gets one message, and one more when events come back. Empty: no expectation."}
      </p>
      {p.nextFires.length ? (
        <div data-testid="next-fires">
          <p className="field-label mb-1">Next {p.nextFires.length} fire times</p>
          <table className="text-xs">
            <thead>
              <tr className="text-left text-slate-500">
                <th className="pr-4 font-medium">In {p.zone ?? "UTC"}</th>
                <th className="font-medium">Your time</th>
              </tr>
            </thead>
            <tbody>
              {p.nextFires.map((iso, i) => (
                <tr key={iso}>
                  <td className="pr-4 font-mono">{p.nextFiresInZone[i]}</td>
                  <td>
                    <LocalTime iso={iso} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}
