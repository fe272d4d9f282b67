"use client";
import { retryLabel } from "@/lib/ui/run-timing";
import type { ShownRunStatus } from "@/lib/ui/run-status";
import { useIsClient } from "./LocalTime";
import { StatusBadge } from "./StatusBadge";

/** "10:14 CET" in the reader's zone (UTC while rendering on the server, which does not know it). */
export function shortTime(iso: string, client: boolean): string {
  const d = new Date(iso);
  if (!client) return `${iso.slice(11, 16)} UTC`;
  const sameDay = d.toDateString() === new Date().toDateString();
  const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
  return sameDay ? time : `${d.toLocaleDateString(undefined, { month: "short", day: "numeric" })}, ${time}`;
}

/**
 * A run's status; a run that failed and waits for its next attempt reads "retrying: attempt 3 of 5
 * pending at 10:14" instead of "queued", which would say it is simply next in line.
 */
export function RunStatusBadge({ run, testId }: { run: { status: ShownRunStatus; attempt: number; max_attempts: number; next_attempt_at: string | null }; testId?: string }) {
  const client = useIsClient();
  const label = retryLabel(run, (iso) => shortTime(iso, client));
  if (!label) return <StatusBadge status={run.status} testId={testId} />;
  return (
    <span data-testid={testId} data-status="retrying" className="inline-flex items-center rounded bg-amber-50 px-1.5 py-0.5 text-xs font-medium text-amber-900 ring-1 ring-amber-300 ring-inset">
      {label}
    </span>
  );
}

/** The reader's zone, named where times are listed ("Times in Europe/Berlin"). */
export function ZoneName({ fallback = "UTC" }: { fallback?: string }) {
  const client = useIsClient();
  if (!client) return <>{fallback}</>;
  return <>{Intl.DateTimeFormat().resolvedOptions().timeZone || fallback}</>;
}

/** The runs filter's zone: its days are the reader's days, as every time on the page is. */
export function ZoneInput() {
  const client = useIsClient();
  return <input type="hidden" name="tz" value={client ? Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC" : ""} readOnly />;
}
