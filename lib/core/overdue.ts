/**
 * When a polled trigger's check counts as overdue: the scheduler ticks every 15 s and a slow feed
 * may take its whole timeout, so a check is late only a minute after it was due. Pure: the
 * applets list, the Health panel and GET /metrics pass the clock's now.
 */
export const OVERDUE_GRACE_MS = 60_000;

/** How long ago the check was due, when that is more than the grace; null when it is not overdue (or has no next check). */
export function overdueMs(nextRunAt: string | null, now: Date, graceMs = OVERDUE_GRACE_MS): number | null {
  if (!nextRunAt) return null;
  const due = Date.parse(nextRunAt);
  if (!Number.isFinite(due)) return null;
  const late = now.getTime() - due;
  return late > graceMs ? late : null;
}

/** "12 min", "3 h 5 min", "40 s": an age in the words the banner and the list use. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
  return `${Math.floor(h / 24)} days`;
}
