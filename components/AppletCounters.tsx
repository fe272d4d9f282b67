"use client";
import { useState } from "react";
import { useRunStream } from "@/lib/ui/stream";
import { TERMINAL_STATUSES, type AppletDetail } from "@/lib/ui/types";
import { LocalTime } from "./LocalTime";

type Counters = Pick<AppletDetail, "last_fired_at" | "run_count">;

/**
 * The applet header's "Last fired" and "Runs finished", kept current: a run of this applet that
 * finishes (a test event, a real one) re-reads them from GET /api/applets/:id, so they no longer
 * stay at "–, 0" until a reload.
 */
export function AppletCounters({ appletId, initial }: { appletId: string; initial: Counters }) {
  const [counters, setCounters] = useState(initial);
  async function reload() {
    const res = await fetch(`/api/applets/${encodeURIComponent(appletId)}`).catch(() => null);
    if (!res?.ok) return;
    const body = (await res.json().catch(() => null)) as { applet?: AppletDetail } | null;
    if (body?.applet) setCounters({ last_fired_at: body.applet.last_fired_at, run_count: body.applet.run_count });
  }
  useRunStream({
    onMessage(m) {
      if (m.applet_id === appletId && TERMINAL_STATUSES.includes(m.status)) void reload();
    },
    onOpen: () => void reload(),
    onFallback: () => void reload(),
  });
  return (
    <>
      <div>
        <dt className="text-xs text-slate-500">Last fired</dt>
        <dd data-testid="last-fired">
          <LocalTime iso={counters.last_fired_at} />
        </dd>
      </div>
      <div>
        <dt className="text-xs text-slate-500">Runs finished</dt>
        <dd className="tabular-nums" data-testid="run-count">
          {counters.run_count}
        </dd>
      </div>
    </>
  );
}
