"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { AlertChannelFields, configOf, valuesOf, type ChannelValues } from "@/components/AlertChannelFields";
import type { AppletAlerts, MetaChannel } from "@/lib/api/queries";
import { api, errorBody } from "@/lib/ui/api-client";

/** An applet's alerts: Settings' channel, none, or one of its own; auto-pause as Settings says, on or off. */
export function AppletAlertsForm({ appletId, initial, actions, settingsChannel }: { appletId: string; initial: AppletAlerts; actions: MetaChannel[]; settingsChannel: string | null }) {
  const router = useRouter();
  const own = typeof initial.channel === "object" ? initial.channel : null;
  const [mode, setMode] = useState<string>(own ? own.type : (initial.channel as string));
  const [values, setValues] = useState<ChannelValues>(valuesOf(own?.config));
  const [autoPause, setAutoPause] = useState(initial.auto_pause);
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const action = actions.find((a) => a.type === mode);

  async function save(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setStatus(null);
    setProblems({});
    const channel = mode === "default" || mode === "none" ? mode : { type: mode, config: configOf(action, values) };
    const res = await api.api.applets[":id"].alerts.$put({ param: { id: appletId }, json: { channel, auto_pause: autoPause } }).catch(() => null);
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

  return (
    <form onSubmit={(e) => void save(e)} className="flex flex-col gap-3 text-sm" aria-label="Alerts of this applet">
      <div className="grid grid-cols-1 gap-3 sm:grid-cols-2">
        <div>
          <label htmlFor="applet-alert-channel" className="field-label mb-1">
            Alerts go to
          </label>
          <select id="applet-alert-channel" className="input" value={mode} onChange={(e) => (setMode(e.target.value), setValues({}), setProblems({}))}>
            <option value="default">{settingsChannel ? `Settings' channel (${actions.find((a) => a.type === settingsChannel)?.channel.label ?? settingsChannel})` : "Settings' channel (none set)"}</option>
            <option value="none">No alerts for this applet</option>
            {actions.map((a) => (
              <option key={a.type} value={a.type}>
                Its own: {a.channel.label}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="applet-auto-pause" className="field-label mb-1">
            Auto-pause
          </label>
          <select id="applet-auto-pause" className="input" value={autoPause} onChange={(e) => setAutoPause(e.target.value as AppletAlerts["auto_pause"])}>
            <option value="default">As in Settings</option>
            <option value="on">On: disable after repeated failures</option>
            <option value="off">Off</option>
          </select>
        </div>
      </div>
      {action ? (
        <div className="rounded-md bg-slate-50 p-3 ring-1 ring-slate-200">
          <AlertChannelFields action={action} values={values} onChange={setValues} problems={problems} idPrefix="applet-alert" />
        </div>
      ) : null}
      <div className="flex items-center gap-3">
        <button type="submit" className="btn-secondary" disabled={busy}>
          {busy ? "Saving…" : "Save alerts"}
        </button>
        {status ? (
          <span role={status.ok ? "status" : "alert"} className={status.ok ? "text-green-800" : "text-red-800"}>
            {status.text}
          </span>
        ) : null}
      </div>
    </form>
  );
}
