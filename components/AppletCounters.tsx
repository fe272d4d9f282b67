"use client";
import { useState } from "react";
import { useRunStream } from "@/lib/ui/stream";
import { api } from "@/lib/ui/api-client";
import { TERMINAL_STATUSES } from "@/lib/ui/run-status";
import { LocalTime } from "./LocalTime";

interface Counters {
  last_fired_at: string | null;
  run_count: number;
}

/**
 * The applet header's "Last fired" and "Runs finished", kept current: a run of this applet that
 * finishes (a test event, a real one) re-reads them from GET /api/applets/:id, so they no longer
 * stay at "–, 0" until a reload.
 */
export function AppletCounters({ appletId, initial }: { appletId: string; initial: Counters }) {
  const [counters, setCounters] = useState(initial);
  async function reload() {
    const res = await api.api.applets[":id"].$get({ param: { id: appletId } }).catch(() => null);
    if (!res?.ok) return;
    const { applet } = await res.json();
    setCounters({ last_fired_at: applet.last_fired_at, run_count: applet.run_count });
  }
  useRunStream({
    onMessage(m) {
      if (m.applet_id === appletId && (TERMINAL_STATUSES as readonly string[]).includes(m.status)) void reload();
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
