/**
 * Wall-clock arithmetic in an IANA zone with nothing but Intl. A wall time is written as the epoch
 * milliseconds it would have in UTC ("floating" time), so every wall minute of a day exists exactly
 * once on that line, whatever the zone's offset changes do to real time.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    if (formatters.size >= 1000) formatters.clear();
    formatters.set(timeZone, f);
  }
  return f;
}

/** The wall time (as floating ms) that `instantMs` shows in `timeZone`. */
export function wallOf(instantMs: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatterFor(timeZone).formatToParts(new Date(instantMs))) {
    if (p.type !== "literal") parts[p.type] = Number(p.value);
  }
  const ms = ((instantMs % 1000) + 1000) % 1000;
  return Date.UTC(parts.year!, parts.month! - 1, parts.day, parts.hour, parts.minute, parts.second, ms);
}

const DAY_MS = 86_400_000;

/**
 * The instant a wall time names in `timeZone`: its first occurrence when the fall-back repeats it;
 * when the spring-forward skips it, the first valid instant after the gap (the moment of the
 * change). Assumes no two offset changes within two days of each other, which holds for every zone.
 */
export function firstInstantOfWall(wallMs: number, timeZone: string): number {
  const offsetBefore = wallOf(wallMs - DAY_MS, timeZone) - (wallMs - DAY_MS);
  const offsetAfter = wallOf(wallMs + DAY_MS, timeZone) - (wallMs + DAY_MS);
  const candidates = [wallMs - offsetBefore, wallMs - offsetAfter].filter((t) => wallOf(t, timeZone) === wallMs);
  if (candidates.length > 0) return Math.min(...candidates);
  // In the gap: the change happened between the two readings; find it to the millisecond.
  let lo = wallMs - Math.max(offsetBefore, offsetAfter); // before the change on either reading
  let hi = wallMs - Math.min(offsetBefore, offsetAfter);
  if (wallOf(lo, timeZone) - lo !== offsetBefore) lo -= DAY_MS;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallOf(mid, timeZone) - mid === offsetBefore) lo = mid;
    else hi = mid;
  }
  return hi;
}
