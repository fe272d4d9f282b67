import { firstInstantOfWall } from "@whenthen/schedules";
import { formatInTimeZone, toDate } from "date-fns-tz";
import { createRequire } from "node:module";
import { decodeHTML } from "entities";
import { parseDateText } from "../core/dates";
import type { FilterArg } from "./parse";

export interface FilterEnv {
  timezone: string;
  warn(message: string): void;
}

type Filter = (value: unknown, args: FilterArg[], env: FilterEnv) => unknown;

/** How any value becomes text: objects as JSON, null/undefined as nothing. */
export function toText(value: unknown, env: FilterEnv): string {
  switch (typeof value) {
    case "string":
      return value;
    case "number":
    case "boolean":
    case "bigint":
      return String(value);
    case "object":
      if (value === null) return "";
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? "" : value.toISOString();
      try {
        return JSON.stringify(value) ?? "";
      } catch (err) {
        env.warn(`cannot render value as JSON: ${err instanceof Error ? err.message : String(err)}`);
        return "";
      }
    default:
      // undefined, functions and symbols have no text form.
      return "";
  }
}

const isEmpty = (v: unknown): boolean => v === undefined || v === null || v === "";

function truncate(value: unknown, args: FilterArg[], env: FilterEnv): unknown {
  const n = Number(args[0]);
  if (!Number.isInteger(n) || n < 0) {
    env.warn(`truncate: expected a whole number of characters, got ${args[0] === undefined ? "nothing" : JSON.stringify(args[0])}`);
    return value;
  }
  const s = toText(value, env);
  // Code units >= graphemes, so a short string needs no segmenting.
  if (s.length <= n) return s;
  // Characters as a reader counts them (grapheme clusters): 👍🏽, é as e + accent, a flag, a
  // family emoji are one each and never cut in two.
  const graphemes = Array.from(GRAPHEMES.segment(s), (g) => g.segment);
  if (graphemes.length <= n) return s;
  // N characters, then the ellipsis: at most N + 1 characters in all.
  return graphemes.slice(0, n).join("").trimEnd() + "…";
}

const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: "grapheme" });

const DEFAULT_DATE_FORMAT = "yyyy-MM-dd'T'HH:mm:ssXXX";
const NUMERIC = /^-?\d+(?:\.\d+)?$/;

const validZones = new Map<string, boolean>();
function isValidTimeZone(tz: string): boolean {
  let ok = validZones.get(tz);
  if (ok === undefined) {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: tz });
      ok = true;
    } catch {
      ok = false;
    }
    if (validZones.size < 1000) validZones.set(tz, ok);
  }
  return ok;
}

/**
 * Below this an epoch number is seconds, not milliseconds: 10-digit values (1772955000) are the
 * seconds most APIs send; as milliseconds they would all be in January 1970. 1e11 seconds is the
 * year 5138; 1e11 milliseconds is March 1973.
 */
const EPOCH_SECONDS_BELOW = 1e11;
const fromEpoch = (n: number): Date => new Date(Math.abs(n) < EPOCH_SECONDS_BELOW ? n * 1000 : n);

const WALL_ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?)?$/;

function toInstant(value: unknown, timezone: string): Date | null {
  if (typeof value === "number") return fromEpoch(value);
  if (value instanceof Date) return value;
  if (typeof value !== "string") return null;
  const s = value.trim();
  if (NUMERIC.test(s)) return fromEpoch(Number(s));
  // An ISO string without an offset is wall time in the applet's timezone, never the server's,
  // placed on real time by the scheduler's rule: a time in the spring-forward gap is the first
  // valid time after it, a repeated fall-back time its first occurrence.
  const wall = WALL_ISO.exec(s);
  if (wall) {
    const [, y, mo, d, h = "0", mi = "0", sec = "0", ms = "0"] = wall;
    const floating = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(sec), Number(ms.padEnd(3, "0")));
    const check = new Date(floating);
    // Date.UTC rolls 2026-02-30 over to March; such a wall time is no date.
    if (check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d) || Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return null;
    return new Date(firstInstantOfWall(floating, timezone));
  }
  const d = toDate(s, { timeZone: timezone });
  if (!Number.isNaN(d.getTime()) && /^\d{4}-\d{2}-\d{2}T.*(?:Z|[+-]\d{2}:?\d{2})$/i.test(s)) return d;
  // RFC 2822 and the other forms feeds and mail use (lib/core/dates); one without a zone is UTC.
  return parseDateText(s);
}

function date(value: unknown, args: FilterArg[], env: FilterEnv): unknown {
  if (isEmpty(value)) return "";
  let tz = env.timezone;
  if (!isValidTimeZone(tz)) {
    env.warn(`date: unknown timezone ${JSON.stringify(tz)}, using UTC`);
    tz = "UTC";
  }
  const d = toInstant(value, tz);
  if (d === null || Number.isNaN(d.getTime())) {
    env.warn(`date: invalid date ${truncateForMessage(toText(value, env))}`);
    return "";
  }
  const fmt = args[0] === undefined ? DEFAULT_DATE_FORMAT : String(args[0]);
  try {
    return formatInTimeZone(d, tz, fmt);
  } catch {
    env.warn(`date: invalid format ${JSON.stringify(fmt)}`);
    return "";
  }
}

// Tags whose removal must leave a word break: `<p>a</p><p>b</p>` is "a b", not "ab".
const BLOCK_TAGS = new Set([
  "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "figure",
  "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
  "section", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
]);
const DROP_CONTENT = ["script", "style", "template", "noscript"];
/**
 * A linear scan, not regexes: feed content is untrusted and backtracking patterns such as
 * `<script[\s\S]*?<\/script>` go quadratic on crafted input.
 */
export function stripHtml(html: string): string {
  const lower = html.toLowerCase();
  let out = "";
  let i = 0;
  const n = html.length;
  while (i < n) {
    const lt = html.indexOf("<", i);
    if (lt === -1) {
      out += html.slice(i);
      break;
    }
    out += html.slice(i, lt);
    if (lower.startsWith("<!--", lt)) {
      const end = html.indexOf("-->", lt + 4);
      i = end === -1 ? n : end + 3;
      continue;
    }
    const next = html.charCodeAt(lt + 1);
    const isTag =
      (next >= 97 && next <= 122) || (next >= 65 && next <= 90) || next === 47 /* / */ || next === 33 /* ! */ || next === 63; /* ? */
    const gt = isTag ? html.indexOf(">", lt + 1) : -1;
    if (gt === -1) {
      out += "<";
      i = lt + 1;
      continue;
    }
    const nameMatch = /^\/?([a-z][a-z0-9-]*)/.exec(lower.slice(lt + 1, Math.min(gt, lt + 40)));
    const name = nameMatch?.[1] ?? "";
    i = gt + 1;
    if (DROP_CONTENT.includes(name) && lower.charCodeAt(lt + 1) !== 47) {
      const close = lower.indexOf(`</${name}`, i);
      if (close === -1) {
        i = n;
      } else {
        const closeEnd = html.indexOf(">", close);
        i = closeEnd === -1 ? n : closeEnd + 1;
      }
      out += " ";
    } else if (BLOCK_TAGS.has(name)) {
      out += " ";
    }
  }
  return decodeEntities(out).replace(/\s+/g, " ").trim();
}

/** Every HTML5 named entity (`&ouml;`, `&eacute;`, `&ograve;` …) and numeric reference, as a browser reads them. */
function decodeEntities(s: string): string {
  return s.includes("&") ? decodeHTML(s) : s;
}

/** Loaded with the first slug (its tables cost every process ~8 MB of RSS; few applets slug). */
let transliterator: typeof import("transliteration").transliterate | undefined;
const transliterate = () => (transliterator ??= (createRequire(import.meta.url)("transliteration") as typeof import("transliteration")).transliterate);

/**
 * URL slugs in ASCII: every script is transliterated first (the transliteration package: "Привет
 * мир" → "privet-mir", "北京" → "bei-jing", "Straße" → "strasse"), so non-Latin text does not
 * vanish.
 */
export function slug(s: string): string {
  const folded = transliterate()(s.normalize("NFC"))
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();
  return folded
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 80)
    .replace(/-+$/, "");
}

// encodeURIComponent throws on a lone surrogate; such text can arrive from truncated payloads.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export const FILTERS: ReadonlyMap<string, Filter> = new Map<string, Filter>([
  ["upper", (v, _a, env) => toText(v, env).toUpperCase()],
  ["lower", (v, _a, env) => toText(v, env).toLowerCase()],
  ["trim", (v, _a, env) => toText(v, env).trim()],
  ["truncate", truncate],
  ["default", (v, args) => (isEmpty(v) ? (args[0] ?? "") : v)],
  [
    "json",
    (v, _a, env) => {
      try {
        return JSON.stringify(v) ?? "";
      } catch (err) {
        env.warn(`json: ${err instanceof Error ? err.message : String(err)}`);
        return "";
      }
    },
  ],
  ["strip_html", (v, _a, env) => stripHtml(toText(v, env))],
  ["slug", (v, _a, env) => slug(toText(v, env))],
  ["date", date],
  ["urlencode", (v, _a, env) => encodeURIComponent(toText(v, env).replace(LONE_SURROGATE, "\uFFFD"))],
]);

function truncateForMessage(s: string): string {
  return JSON.stringify(s.length > 60 ? s.slice(0, 60) + "…" : s);
}
