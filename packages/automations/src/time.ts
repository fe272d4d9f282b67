/**
 * Time-zone arithmetic on Intl alone, so the core runs on Workers as well as Node. Formatters are
 * cached per zone: building one costs far more than using it, and the planner asks per event.
 */

export interface WallTime {
  year: number;
  /** 1-12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second?: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const validity = new Map<string, boolean>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
      era: "short",
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** True when the runtime knows the IANA zone. */
export function isValidTimeZone(timeZone: unknown): timeZone is string {
  if (typeof timeZone !== "string" || timeZone === "") return false;
  const known = validity.get(timeZone);
  if (known !== undefined) return known;
  let ok = true;
  try {
    formatter(timeZone);
  } catch {
    ok = false;
  }
  validity.set(timeZone, ok);
  return ok;
}

/** The wall clock read through Intl: the ground truth the cached offsets below are built from. */
function intlWall(instant: number, timeZone: string): Required<WallTime> {
  const wall: Required<WallTime> = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  let bc = false;
  for (const part of formatter(timeZone).formatToParts(instant)) {
    switch (part.type) {
      case "year": wall.year = Number(part.value); break;
      case "month": wall.month = Number(part.value); break;
      case "day": wall.day = Number(part.value); break;
      case "hour": wall.hour = Number(part.value); break;
      case "minute": wall.minute = Number(part.value); break;
      case "second": wall.second = Number(part.value); break;
      case "era": bc = part.value === "BC" || part.value === "B"; break;
      // literal, weekday, dayPeriod, timeZoneName…: nothing the wall time is made of.
      default: break;
    }
  }
  if (bc) wall.year = 1 - wall.year;
  return wall;
}

function wallAsUtc(w: WallTime): number {
  // Date.UTC maps years 0-99 to 1900-1999; the setters do not.
  if (w.year >= 100) return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second ?? 0);
  const d = new Date(0);
  d.setUTCFullYear(w.year, w.month - 1, w.day);
  d.setUTCHours(w.hour, w.minute, w.second ?? 0, 0);
  return d.getTime();
}

function intlOffset(instant: number, timeZone: string): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return wallAsUtc(intlWall(whole, timeZone)) - whole;
}

const DAY = 86_400_000;

/**
 * The offsets of one UTC day in one zone: `before` until `changeAt`, `after` from it. formatToParts
 * costs microseconds and the planner asks several times per step, so each zone's days are read
 * from Intl once (two calls, or a binary search to the second on a day the clocks change) and
 * cached. This assumes a zone changes its offset at most once in a UTC day, as every zone has
 * done in modern times.
 */
interface DayOffsets {
  before: number;
  after: number;
  changeAt: number;
}

const dayCache = new Map<string, Map<number, DayOffsets>>();
const DAY_CACHE_LIMIT = 50_000;

function dayOffsets(day: number, timeZone: string): DayOffsets {
  let days = dayCache.get(timeZone);
  if (!days) {
    days = new Map();
    dayCache.set(timeZone, days);
  }
  let entry = days.get(day);
  if (entry) return entry;
  const start = day * DAY;
  const before = intlOffset(start, timeZone);
  const after = intlOffset(start + DAY, timeZone);
  let changeAt = start + DAY;
  if (before !== after) {
    // Offsets change on whole seconds: find the first second showing the new offset.
    let lo = start / 1000;
    let hi = (start + DAY) / 1000;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (intlOffset(mid * 1000, timeZone) === before) lo = mid;
      else hi = mid;
    }
    changeAt = hi * 1000;
  }
  entry = { before, after, changeAt };
  if (days.size >= DAY_CACHE_LIMIT) days.clear();
  days.set(day, entry);
  return entry;
}

/** The zone's offset from UTC at `instant`, in ms (east positive). */
export function zoneOffsetMs(instant: number, timeZone: string): number {
  const entry = dayOffsets(Math.floor(instant / DAY), timeZone);
  return instant < entry.changeAt ? entry.before : entry.after;
}

/** The wall clock in `timeZone` at `instant` (epoch ms). */
export function instantToZonedWall(instant: number, timeZone: string): Required<WallTime> {
  const d = new Date(Math.floor(instant / 1000) * 1000 + zoneOffsetMs(instant, timeZone));
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds() };
}


/**
 * The instant a wall-clock time happens in `timeZone`. On the night the clocks change, a time the
 * zone skips (02:30 when 02:00 becomes 03:00) is moved forward by the gap (03:30), and a time it
 * shows twice is its first occurrence. Both are decided from the offsets a day either side, so the
 * answer does not depend on which side of Greenwich the zone lies.
 */
export function zonedWallToInstant(wall: WallTime, timeZone: string): number {
  const local = wallAsUtc(wall);
  const before = zoneOffsetMs(local - DAY, timeZone);
  const after = zoneOffsetMs(local + DAY, timeZone);
  const early = local - before;
  const late = local - after;
  const earlyOk = zoneOffsetMs(early, timeZone) === before;
  const lateOk = zoneOffsetMs(late, timeZone) === after;
  if (earlyOk && lateOk) return Math.min(early, late);
  if (earlyOk) return early;
  if (lateOk) return late;
  // In the gap: read with the offset in force before it, the wall time lands as far past the gap's
  // end as it was past its start.
  return early;
}

const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** Minutes after midnight for "HH:MM" (24-hour), or null. */
export function parseClockTime(value: unknown): number | null {
  if (typeof value !== "string") return null;
  const m = CLOCK.exec(value);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

const ISO_WITH_ZONE = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)$/i;

/**
 * Reads an instant: epoch ms, a Date, or ISO 8601 text that names its zone ("Z" or an offset).
 * Text without a zone is refused (null), not guessed.
 */
export function readInstant(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (value instanceof Date) {
    const t = value.getTime();
    return Number.isFinite(t) ? t : null;
  }
  if (typeof value !== "string") return null;
  const m = ISO_WITH_ZONE.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return null;
  let t = Date.UTC(Number(y), month - 1, day, hour, minute, second);
  // Date.UTC rolls 31 February into March; the text did not mean that.
  if (new Date(t).getUTCDate() !== day) return null;
  if (frac) t += Math.floor(Number(`0.${frac}`) * 1000);
  if (zone && zone.toUpperCase() !== "Z") {
    const sign = zone[0] === "-" ? -1 : 1;
    const digits = zone.slice(1).replace(":", "");
    const offset = (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || 0)) * 60_000;
    t -= sign * offset;
  }
  return t;
}
