import type { Duration } from "./types";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const WHOLE = /^([+-])?((?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+)$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g;

/**
 * Reads a duration: milliseconds as a number, or text such as "-24h", "2h", "1h30m", "500ms".
 * Returns null for anything else (a bare numeric string is refused: "3600" could mean s or ms).
 */
export function parseDuration(value: Duration | null | undefined): number | null {
  if (typeof value === "number") return Number.isFinite(value) && Number.isInteger(value) ? value : null;
  if (typeof value !== "string") return null;
  const match = WHOLE.exec(value.trim());
  if (!match) return null;
  let total = 0;
  for (const part of (match[2] ?? "").matchAll(PART)) total += Number(part[1]) * (UNIT_MS[part[2] ?? ""] ?? Number.NaN);
  total = Math.round(total);
  if (!Number.isSafeInteger(total)) return null;
  return match[1] === "-" ? -total : total;
}

/** The duration in milliseconds; throws on a value `parseRule` would have refused. */
export function durationMs(value: Duration): number {
  const ms = parseDuration(value);
  if (ms === null) throw new TypeError(`@vibedout/automations: not a duration: ${JSON.stringify(value)}`);
  return ms;
}
