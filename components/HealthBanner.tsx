"use client";
import { useEffect, useState } from "react";
import type { HealthMessage } from "@/lib/api/stream";
import { useHealthStream } from "@/lib/ui/stream";
import { formatAge } from "@/lib/core/overdue";

/**
 * The banner on every signed-in page: the worker's heartbeat is stale, or the SMTP
 * receiver is configured but nothing listens. The layout renders the state it read; the stream's
 * `health` events show and hide it without a reload (lib/bus/health watches the heartbeat), and
 * the worker's age counts up here between events.
 */
export function HealthBanner({ initial }: { initial: HealthMessage | null }) {
  const [state, setState] = useState<{ banner: HealthMessage | null; at: number }>(() => ({ banner: initial, at: Date.now() }));
  const [now, setNow] = useState(() => Date.now());
  useHealthStream((banner) => setState({ banner, at: Date.now() }));
  const worker = state.banner?.worker ?? null;
  useEffect(() => {
    if (!worker) return;
    const timer = setInterval(() => setNow(Date.now()), 10_000);
    return () => clearInterval(timer);
  }, [worker]);
  const smtp = state.banner?.smtp ?? null;
  if (!worker && !smtp) return null;
  const age = worker?.ageMs == null ? null : worker.ageMs + Math.max(0, now - state.at);
  return (
    <div role="status" aria-live="polite" data-testid="health-banner" className="mb-4 space-y-2">
      {worker ? (
        <p className="rounded-md border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-900" data-testid="banner-worker">
          <strong className="font-semibold">{age === null ? "No worker has run yet" : `The worker has not been seen for ${formatAge(age)}`}:</strong>{" "}
          {worker.queued > 0 ? `${worker.queued} ${worker.queued === 1 ? "run is" : "runs are"} queued but nothing executes.` : "new runs are queued but nothing executes."} Start it with{" "}
          <code className="rounded bg-amber-100 px-1">pnpm worker</code> / check the worker container.
        </p>
      ) : null}
      {smtp ? (
        <p className="rounded-md border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-900" data-testid="banner-smtp">
          <strong className="font-semibold">The SMTP receiver is configured but not listening</strong> (port {smtp.port}): email triggers receive nothing. Start the worker that
          runs it (<code className="rounded bg-amber-100 px-1">pnpm worker</code>, or the <code className="rounded bg-amber-100 px-1">worker</code> container), or set{" "}
          <code className="rounded bg-amber-100 px-1">INBOUND_EMAIL=false</code> if you do not use email triggers.
        </p>
      ) : null}
    </div>
  );
}
