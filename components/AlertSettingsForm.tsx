"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { AlertChannelFields, configOf, valuesOf, type ChannelValues } from "@/components/AlertChannelFields";
import { LocalTime } from "@/components/LocalTime";
import type { AlertSettingsView, MetaChannel } from "@/lib/api/queries";
import { api, errorBody } from "@/lib/ui/api-client";

/** Settings → Failure alerts: the channel (an action plug-in), the window, the trigger threshold, auto-pause, and the latest alerts. */
export function AlertSettingsForm({ initial, actions }: { initial: AlertSettingsView; actions: MetaChannel[] }) {
  const router = useRouter();
  const [type, setType] = useState<string>(initial.channel?.type ?? "");
  const [values, setValues] = useState<ChannelValues>(valuesOf(initial.channel?.config));
  const [windowMinutes, setWindow] = useState(String(initial.window_minutes));
  const [threshold, setThreshold] = useState(String(initial.trigger_threshold));
  const [autoPause, setAutoPause] = useState(initial.auto_pause);
  const [autoPauseAfter, setAutoPauseAfter] = useState(String(initial.auto_pause_after));
  const [alertOnRetry, setAlertOnRetry] = useState(initial.alert_on_retry);
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const action = actions.find((a) => a.type === type);

  async function save(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setStatus(null);
    setProblems({});
    const json = {
      channel: type ? { type, config: configOf(action, values) } : null,
      window_minutes: Number(windowMinutes),
      trigger_threshold: Number(threshold),
      auto_pause: autoPause,
      auto_pause_after: Number(autoPauseAfter),
      alert_on_retry: alertOnRetry,
    };
    const res = await api.api.settings.alerts.$put({ json }).catch(() => null);
    setBusy(false);
    if (res?.ok) {
      setStatus({ ok: true, text: "Saved." });
      router.refresh();
      return;
    }
    const body = res ? await errorBody(res) : {};
    setProblems(Object.fromEntries((body.problems ?? []).map((p) => [p.path, p.message])));
    setStatus({ ok: false, text: body.error ?? (res ? `failed (${res.status})` : "network error") });
  }

  async function test() {
    setStatus(null);
    const res = await api.api.settings.alerts.test.$post().catch(() => null);
    if (res?.ok) {
      setStatus({ ok: true, text: "Test alert queued: the worker sends it within a few seconds; it shows below." });
      setTimeout(() => router.refresh(), 6_000);
    } else {
      const body = res ? await errorBody(res) : {};
      setStatus({ ok: false, text: body.error ?? "network error" });
    }
  }

  return (
    <div className="flex flex-col gap-4 text-sm">
      <form onSubmit={(e) => void save(e)} className="flex flex-col gap-4" aria-label="Alert settings">
        <p className="text-slate-600">
          When a run fails or goes dead, or a feed, poll or schedule keeps failing, whenthen tells you here. At most one message per applet per window; what happens in
          between is counted into the next one.
        </p>
        <div>
          <label htmlFor="alert-channel" className="field-label mb-1">
            Channel
          </label>
          <select id="alert-channel" className="input sm:w-72" value={type} onChange={(e) => (setType(e.target.value), setValues({}), setProblems({}))}>
            <option value="">None: no alerts</option>
            {actions.map((a) => (
              <option key={a.type} value={a.type}>
                {a.channel.label}
              </option>
            ))}
          </select>
          {problems["channel.type"] ? <p className="mt-1 text-xs text-red-700">{problems["channel.type"]}</p> : null}
          {action?.channel.help ? <p className="help">{action.channel.help}</p> : null}
        </div>
        {action ? (
          <div className="rounded-md bg-slate-50 p-3 ring-1 ring-slate-200">
            <AlertChannelFields action={action} values={values} onChange={setValues} problems={problems} idPrefix="alert" />
            <p className="help mt-2">
              Use <span className="code">{"{{secrets.NAME}}"}</span> for tokens and webhook URLs; they are resolved when an alert is sent and redacted from every answer shown here.
            </p>
          </div>
        ) : null}
        <div className="grid grid-cols-1 gap-3 sm:grid-cols-3">
          <NumberField id="alert-window" label="Window (minutes)" value={windowMinutes} set={setWindow} help="At most one alert per applet in this time." problem={problems["window_minutes"]} />
          <NumberField id="alert-threshold" label="Trigger failures" value={threshold} set={setThreshold} help="Consecutive failed checks of a feed, poll or schedule before an alert." problem={problems["trigger_threshold"]} />
          <NumberField id="alert-pause-after" label="Auto-pause after" value={autoPauseAfter} set={setAutoPauseAfter} help="Failed or dead runs in a row." problem={problems["auto_pause_after"]} />
        </div>
        <label className="flex items-start gap-2">
          <input type="checkbox" className="mt-0.5" checked={alertOnRetry} onChange={(e) => setAlertOnRetry(e.target.checked)} data-testid="alert-on-retry" />
          <span>
            Alert on the first failed attempt: as soon as a run fails and a retry is scheduled, not only when it has used up its attempts (which can be an hour or more
            later). A retry that then succeeds sends a recovery notice.
          </span>
        </label>
        <label className="flex items-start gap-2">
          <input type="checkbox" className="mt-0.5" checked={autoPause} onChange={(e) => setAutoPause(e.target.checked)} />
          <span>
            Auto-pause by default: disable an applet after {autoPauseAfter || "N"} failed runs in a row (each applet can choose otherwise on its page).
          </span>
        </label>
        <div className="flex flex-wrap items-center gap-3">
          <button type="submit" className="btn-primary" disabled={busy}>
            {busy ? "Saving…" : "Save alert settings"}
          </button>
          <button type="button" className="btn-secondary" onClick={() => void test()} disabled={!initial.channel}>
            Send test alert
          </button>
          {status ? (
            <span role={status.ok ? "status" : "alert"} className={status.ok ? "text-green-800" : "text-red-800"}>
              {status.text}
            </span>
          ) : null}
        </div>
      </form>

      <LatestAlerts recent={initial.recent} />
    </div>
  );
}

function NumberField({ id, label, value, set, help, problem }: { id: string; label: string; value: string; set: (v: string) => void; help: string; problem: string | undefined }) {
  return (
    <div>
      <label htmlFor={id} className="field-label mb-1">
        {label}
      </label>
      <input id={id} type="number" min={1} className="input sm:w-32" value={value} onChange={(e) => set(e.target.value)} />
      {problem ? (
        <p className="mt-1 text-xs text-red-700" role="alert">
          {problem}
        </p>
      ) : (
        <p className="help">{help}</p>
      )}
    </div>
  );
}

function LatestAlerts({ recent }: { recent: AlertSettingsView["recent"] }) {
  return (
    <div>
      <h3 className="mb-1 font-medium">Latest alerts</h3>
      {recent.length === 0 ? (
        <p className="text-slate-600">None yet.</p>
      ) : (
        <ul className="divide-y divide-slate-100" data-testid="alert-list">
          {recent.map((a) => (
            <li key={a.id} className="py-2">
              <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
                <span className={`rounded px-1.5 py-0.5 text-xs font-medium ${STATUS_STYLE[a.status] ?? "bg-slate-100 text-slate-700"}`}>{a.status}</span>
                <span className="font-medium">{KIND_LABEL[a.kind] ?? a.kind}</span>
                {a.applet_id ? (
                  <a href={`/applets/${a.applet_id}`} className="text-indigo-700 hover:underline">
                    {a.applet_name ?? a.applet_id}
                  </a>
                ) : null}
                {a.folded ? <span className="text-slate-600">+ {a.folded} more</span> : null}
                <LocalTime iso={a.created_at} className="text-xs text-slate-500" />
                {a.run_id ? (
                  <a href={`/runs/${a.run_id}`} className="text-xs text-indigo-700 hover:underline">
                    run
                  </a>
                ) : null}
              </div>
              {a.status === "failed" || a.status === "skipped" ? (
                <p className="mt-1 font-mono text-xs break-words text-red-800" data-testid="provider-answer">
                  {a.channel_type && !a.provider_answer?.startsWith(`${a.channel_type}:`) ? `${a.channel_type}: ` : ""}
                  {a.provider_answer}
                </p>
              ) : null}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

const STATUS_STYLE: Record<string, string> = {
  sent: "bg-green-100 text-green-800",
  failed: "bg-red-100 text-red-800",
  pending: "bg-amber-100 text-amber-900",
  sending: "bg-amber-100 text-amber-900",
  skipped: "bg-slate-100 text-slate-700",
};
const KIND_LABEL: Record<string, string> = { failure: "Run failed", trigger: "Trigger failing", recovery: "Recovered", paused: "Auto-paused", test: "Test alert" };
