import { formatInTimeZone, toDate } from "date-fns-tz";
import { decodeHTML } from "entities";
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
  // Code units >= code points, so a short string needs no splitting.
  if (s.length <= n) return s;
  const chars = Array.from(s);
  if (chars.length <= n) return s;
  // N characters, then the ellipsis: at most N + 1 characters in all.
  return chars.slice(0, n).join("").trimEnd() + "…";
}

const DEFAULT_DATE_FORMAT = "yyyy-MM-dd'T'HH:mm:ssXXX";
const NUMERIC = /^-?\d+(?:\.\d+)?$/;
// RFC 2822 dates (RSS pubDate) always carry a zone, so Date.parse gives the same answer on every host.
const EXPLICIT_ZONE = /(?:\b(?:GMT|UTC|UT|Z|[ECMP][SD]T)|[+-]\d{2}:?\d{2})\s*$/i;

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

function toInstant(value: unknown, timezone: string): Date | null {
  if (typeof value === "number") return new Date(value);
  if (value instanceof Date) return value;
  if (typeof value !== "string") return null;
  const s = value.trim();
  if (NUMERIC.test(s)) return new Date(Number(s));
  // An ISO string without an offset is read as wall time in the applet's timezone, never the
  // server's: rendering must not depend on the host's TZ.
  const d = toDate(s, { timeZone: timezone });
  if (!Number.isNaN(d.getTime())) return d;
  return EXPLICIT_ZONE.test(s) ? new Date(Date.parse(s)) : null;
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

// Letters NFKD does not decompose into ASCII.
const ASCII_FOLD: Record<string, string> = {
  ß: "ss", æ: "ae", œ: "oe", ø: "o", đ: "d", ð: "d", ł: "l", þ: "th", ı: "i", ħ: "h",
};

export function slug(s: string): string {
  const folded = s
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .replace(/[ßæœøđðłþıħ]/g, (ch) => ASCII_FOLD[ch] ?? "");
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
