/** Delay before attempt n+1 after attempt n failed: 30 s, 2 min, 10 min, 1 h, 6 h (spec Worker 4). */
const BACKOFF_MS = [30_000, 120_000, 600_000, 3_600_000, 21_600_000];

export function backoffMs(failedAttempt: number, retryAfterMs?: number): number {
  const curve = BACKOFF_MS[Math.min(Math.max(failedAttempt, 1), BACKOFF_MS.length) - 1]!;
  // A provider's Retry-After wins when it asks for longer, capped at a day.
  return Math.min(Math.max(curve, retryAfterMs ?? 0), 86_400_000);
}
