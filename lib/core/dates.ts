import { firstInstantOfWall, isValidTimeZone } from "@whenthen/schedules";

/**
 * Dates as feeds and mail write them: RFC 822/1123/2822 (`Sun, 08 Mar 2026 10:00:00 +0100`, with
 * the obsolete zone names, two-digit years and no weekday), RFC 850 (`Sunday, 08-Mar-26 …`),
 * asctime (`Sun Mar  8 10:00:00 2026`), and ISO 8601 / W3C-DTF / RFC 3339 in full or cut short
 * (`2026`, `2026-03`, `2026-03-08`, `03-12-31` for 2003-12-31, `20260308T100000Z`).
 *
 * Rules, the same on every host:
 * - a time without a zone is UTC (never the server's zone);
 * - named zones are read: the RFC ones (GMT, UT, EST … PDT), the common European and Pacific
 *   abbreviations (CET, CEST, MET, MEST, EET, BST, JST, AEST …), the generic North American ones
 *   (ET, CT, MT, PT, AT, which follow daylight saving time on the date given) and IANA names
 *   (`Europe/Berlin`, `Etc/GMT+5`); a wall time an IANA zone skips is placed by the scheduler's
 *   rule (the first valid time after the gap);
 * - a two-digit year is 2000–2049 for 00–49 and 1950–1999 for 50–99 (RFC 2822 §4.3);
 * - anything else is refused (null): an out-of-range field (`2026-02-30`, `25:00`), an unknown
 *   zone, trailing text. Nothing falls back to `Date.parse`, which would read `Sun, Dec x 2012` as
 *   1 December.
 */
export function parseDateText(text: string): Date | null {
  const s = text.trim().replace(/\s+/g, " ");
  if (s === "" || s.length > 100) return null;
  const parts = iso(s) ?? rfc822(s) ?? usStyle(s);
  if (parts === null) return null;
  return toInstant(parts);
}

interface Parts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  ms: number;
  /** Offset east of UTC in minutes, an IANA zone name, or null (no zone: UTC). */
  zone: number | string | null;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
// Portuguese, which Brazilian and Portuguese feeds write in RFC 822 dates (`Qui, 23 Fev 2023`):
// the first three letters of the months whose English ones differ.
const PORTUGUESE_MONTHS: Record<string, number> = { fev: 2, abr: 4, mai: 5, ago: 8, set: 9, out: 10, dez: 12 };
// A weekday, English or Portuguese (`seg`, `sex`, `sáb`, `segunda-feira`), then a comma and/or a
// space: `Fri,24 Nov 2023` has no space after its comma.
const WEEKDAY = "(?:mon|tue|wed|thu|fri|sat|sun|dom|seg|ter|qua|qui|sex|s[aá]b)[a-zçá-]*\\.?(?:, ?| )";
const MONTH_NAME = "(jan|feb|fev|mar|apr|abr|may|mai|jun|jul|aug|ago|sep|sept|set|oct|out|nov|dec|dez)[a-zç]*\\.?";
const TIME = "(\\d{1,2}):(\\d{2})(?::(\\d{2})(?:[.,](\\d{1,9}))?)?(?: ?([ap]\\.?m\\.?))?";
const ZONE = "([a-z][a-z_/+-]*[a-z0-9]|[a-z]|[+-]\\d{1,2}(?::?\\d{2})?|(?:gmt|utc|ut)[+-]\\d{1,2}(?::?\\d{2})?)";

const ISO = /^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)? ?(.*)$/i;
const ISO_COMPACT = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})?(?:[.,](\d{1,9}))?)? ?(.*)$/i;
const ISO_SHORT_YEAR = /^(\d{2})(-?)(\d{2})\2(\d{2})$/;
const RFC822 = new RegExp(`^(?:${WEEKDAY})?(\\d{1,2})(?:st|nd|rd|th)?[ -]${MONTH_NAME}[ ,-]*(\\d{2}|\\d{4})(?:[ ,T]+${TIME})?(?: ?${ZONE})?(?: \\([^)]*\\))?$`, "i");
// "Sun Mar 8 10:00:00 2026" (asctime), "Sun Mar 08 2026 10:00:00 GMT+0100 (CET)" (JavaScript),
// "March 8, 2026 10:00 AM EST" (hand-written).
const US_STYLE = new RegExp(`^(?:${WEEKDAY})?${MONTH_NAME} (\\d{1,2})(?:st|nd|rd|th)?,?(?: (\\d{4}),?)?(?: ${TIME})?(?: ?${ZONE})?(?: (\\d{4}))?(?: \\([^)]*\\))?$`, "i");

function iso(s: string): Parts | null {
  const short = ISO_SHORT_YEAR.exec(s);
  if (short) return { year: twoDigitYear(Number(short[1])), month: Number(short[3]), day: Number(short[4]), hour: 0, minute: 0, second: 0, ms: 0, zone: null };
  const m = ISO_COMPACT.exec(s) ?? ISO.exec(s);
  if (!m) return null;
  // A bare year must be the whole text: "2026 is here" is no date.
  const zone = m[8] ? zoneOf(m[8]) : null;
  if (zone === undefined) return null;
  return {
    year: Number(m[1]),
    month: m[2] ? Number(m[2]) : 1,
    day: m[3] ? Number(m[3]) : 1,
    hour: m[4] ? Number(m[4]) : 0,
    minute: m[5] ? Number(m[5]) : 0,
    second: m[6] ? Number(m[6]) : 0,
    ms: fraction(m[7]),
    zone,
  };
}

function rfc822(s: string): Parts | null {
  const m = RFC822.exec(s);
  if (!m) return null;
  const year = m[3]!.length === 2 ? twoDigitYear(Number(m[3])) : Number(m[3]);
  return withTime({ year, month: monthOf(m[2]!), day: Number(m[1]) }, m.slice(4, 9), m[9]);
}

function usStyle(s: string): Parts | null {
  const m = US_STYLE.exec(s);
  if (!m) return null;
  const year = m[3] ?? m[10];
  if (year === undefined || (m[3] !== undefined && m[10] !== undefined)) return null;
  return withTime({ year: Number(year), month: monthOf(m[1]!), day: Number(m[2]) }, m.slice(4, 9), m[9]);
}

function withTime(date: { year: number; month: number; day: number }, time: (string | undefined)[], zoneText: string | undefined): Parts | null {
  const [h, min, sec, frac, ampm] = time;
  let hour = h === undefined ? 0 : Number(h);
  if (ampm !== undefined) {
    if (hour < 1 || hour > 12) return null;
    hour = (hour % 12) + (/^p/i.test(ampm) ? 12 : 0);
  }
  const zone = zoneText === undefined ? null : zoneOf(zoneText);
  if (zone === undefined) return null;
  return { ...date, hour, minute: min === undefined ? 0 : Number(min), second: sec === undefined ? 0 : Number(sec), ms: fraction(frac), zone };
}

const twoDigitYear = (yy: number): number => (yy < 50 ? 2000 + yy : 1900 + yy);
const monthOf = (name: string): number => {
  const three = name.slice(0, 3).toLowerCase();
  return PORTUGUESE_MONTHS[three] ?? MONTHS.indexOf(three) + 1;
};
const fraction = (digits: string | undefined): number => (digits ? Math.floor(Number(`0.${digits}`) * 1000) : 0);

/** Fixed offsets (minutes east of UTC) of zone abbreviations that mean one offset. */
const FIXED_ZONES: Record<string, number> = {
  z: 0, ut: 0, utc: 0, gmt: 0, uct: 0, wet: 0, west: 60, bst: 60,
  cet: 60, cest: 120, met: 60, mest: 120, mez: 60, mesz: 120, eet: 120, eest: 180, msk: 180,
  est: -300, edt: -240, cst: -360, cdt: -300, mst: -420, mdt: -360, pst: -480, pdt: -420,
  ast: -240, adt: -180, akst: -540, akdt: -480, hst: -600, nst: -210, ndt: -150,
  jst: 540, kst: 540, hkt: 480, sgt: 480, awst: 480, acst: 570, acdt: 630, aest: 600, aedt: 660, nzst: 720, nzdt: 780,
};
/** Generic names whose offset depends on the date: read in the zone they name. */
const GENERIC_ZONES: Record<string, string> = {
  et: "America/New_York", ct: "America/Chicago", mt: "America/Denver", pt: "America/Los_Angeles", at: "America/Halifax",
};

/** Minutes east of UTC, an IANA name, or undefined for text that is no zone. */
function zoneOf(text: string): number | string | undefined {
  const t = text.trim();
  const lower = t.toLowerCase();
  if (lower in FIXED_ZONES) return FIXED_ZONES[lower];
  if (lower in GENERIC_ZONES) return GENERIC_ZONES[lower];
  // RFC 2822 §4.3: military letters other than Z are ambiguous and count as "-0000" (UTC).
  if (/^[a-ik-y]$/i.test(t)) return 0;
  const offset = /^(?:gmt|utc|ut)?([+-])(\d{1,2})(?::?(\d{2}))?$/i.exec(t);
  if (offset) {
    const hours = Number(offset[2]);
    const minutes = offset[3] ? Number(offset[3]) : 0;
    // "+5" is hours, "+0530" arrives as 05 and 30; more than 14 hours is no offset in use.
    if (hours > 14 || minutes > 59) return undefined;
    return (offset[1] === "-" ? -1 : 1) * (hours * 60 + minutes);
  }
  if (t.includes("/") && isValidTimeZone(t)) return t;
  return undefined;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

function toInstant(p: Parts): Date | null {
  if (p.year < 1 || p.year > 9999 || p.month < 1 || p.month > 12) return null;
  const days = p.month === 2 && isLeap(p.year) ? 29 : DAYS_IN_MONTH[p.month - 1]!;
  if (p.day < 1 || p.day > days) return null;
  // 24:00:00 is the end of the day (ISO 8601); 60 seconds is a leap second, read as the next minute.
  const endOfDay = p.hour === 24 && p.minute === 0 && p.second === 0 && p.ms === 0;
  if ((p.hour > 23 && !endOfDay) || p.minute > 59 || p.second > 60) return null;
  const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second, p.ms);
  // Date.UTC maps years 0–99 to 1900–1999; the year is set again so "0050" stays year 50.
  const wallMs = p.year < 100 ? new Date(wall).setUTCFullYear(p.year) : wall;
  const ms = typeof p.zone === "string" ? firstInstantOfWall(wallMs, p.zone) : wallMs - (p.zone ?? 0) * 60_000;
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** `2026-03-07T13:00:00.000Z` or with an offset; a day that is not in its month (Date.parse rolls 02-31 over) is not a date. */
export function isIsoDateTime(value: unknown): value is string {
  if (typeof value !== "string") return false;
  const m = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.exec(value);
  if (!m || Number.isNaN(Date.parse(value))) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day;
}
