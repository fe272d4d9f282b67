import { toText } from "./text";

/** The spec's bounds, in one place. */
export const LIMITS = {
  webhookBodyBytes: 1024 * 1024,
  /** Session API request bodies (an applet, a test event); the import of an export file may be larger. */
  apiBodyBytes: 2 * 1024 * 1024,
  importBodyBytes: 10 * 1024 * 1024,
  /** Nesting of JSON from outside (lib/core/json.ts); real payloads stay far below it. */
  jsonDepth: 100,
  /**
   * Object keys (or form fields) of a webhook body parsed into ingredients; a body with more is
   * kept as raw text with a parse_error. More could not be stored anyway: 10,000 keys of even one
   * character each fill most of the 64 KB a stored payload may take.
   */
  payloadKeys: 10_000,
  storedPayloadBytes: 64 * 1024,
  logLines: 100,
  logLineBytes: 1024,
  seenKeys: 500,
  runsPageSize: 50,
} as const;

/**
 * Caps a JSON value at `maxBytes` of serialized text, keeping its shape where it can: long strings
 * are shortened first (the longest cut most, to one common length), and only when the structure
 * itself is too big are entries dropped, from the end of each object and array, with a marker
 * saying how many. Returns whether anything was cut, so callers can store `truncated: true`, and
 * the JSON text, so they need not serialize it again.
 *
 * The cost is linear in the size of the value whatever its shape: one serialization to measure,
 * one walk to find the string length that fits, one walk to build the copy and one serialization
 * of the (small) result. The old loop re-copied and re-serialized the whole value up to nine times
 * when shorter strings could not make it fit (100,000 short form fields), which stalled the web
 * event loop for a second per request. The number of keys kept is bounded by the byte budget: each
 * kept entry costs at least four bytes, and nothing is walked past the budget.
 *
 * `text` is the value's JSON when the caller has it already.
 */
export function capJson(value: unknown, maxBytes: number = LIMITS.storedPayloadBytes, text?: string): { value: unknown; truncated: boolean; json: string } {
  const whole = text ?? JSON.stringify(value) ?? "null";
  const wholeBytes = Buffer.byteLength(whole);
  if (wholeBytes <= maxBytes) return { value, truncated: false, json: whole };
  // Room for the markers and the `…` of cut strings, which the measurement does not see.
  const budget = Math.floor(maxBytes * 0.9);
  const costs: number[] = [];
  collectStringCosts(value, costs);
  const stringBytes = costs.reduce((a, b) => a + b, 0);
  const limit = stringLimit(costs, budget - (wholeBytes - stringBytes));
  const cut = capValue(value, limit, { left: budget });
  const json = JSON.stringify(cut) ?? "null";
  if (Buffer.byteLength(json) <= maxBytes) return { value: cut, truncated: true, json };
  // Serialized, the preview's quotes are escaped again: cut by its serialized size, not its own.
  const preview = { preview: cutString(whole, jsonBytes(whole), maxBytes - 16) };
  return { value: preview, truncated: true, json: JSON.stringify(preview) };
}

/** Shortest a cut string becomes: below this a string says too little to be worth keeping whole entries out for. */
const MIN_STRING = 64;

/** Serialized size of a string: quotes, escapes and UTF-8 included (fast for the common plain ASCII). */
function jsonBytes(s: string): number {
  if (/^[\x20\x21\x23-\x5b\x5d-\x7e]*$/.test(s)) return s.length + 2;
  let n = 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c) n += 2;
    else if (c < 0x20) n += c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
    else if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) n += 6; // a lone surrogate is written \uXXXX
    else n += 3;
  }
  return n;
}

function collectStringCosts(value: unknown, out: number[]): void {
  if (typeof value === "string") out.push(jsonBytes(value));
  else if (Array.isArray(value)) for (const v of value) collectStringCosts(v, out);
  else if (value && typeof value === "object") for (const k of Object.keys(value)) collectStringCosts((value as Record<string, unknown>)[k], out);
}

/**
 * The largest per-string size (in serialized bytes) such that all strings cut to it fit in `room`,
 * found by bisection over the measured sizes; MIN_STRING when even that does not fit.
 */
function stringLimit(costs: number[], room: number): number {
  const total = (limit: number) => costs.reduce((sum, c) => sum + Math.min(c, limit), 0);
  let lo = MIN_STRING;
  let hi = costs.reduce((m, c) => (c > m ? c : m), MIN_STRING);
  if (total(lo) > room) return MIN_STRING;
  if (total(hi) <= room) return hi;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (total(mid) <= room) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** `value` (serialized size `cost`) cut so that it and its `…` serialize to at most `limit` bytes. */
function cutString(value: string, cost: number, limit: number): string {
  let n = Math.floor((value.length * Math.max(0, limit - 5)) / cost);
  let out = value.slice(0, n);
  while (n > 0 && jsonBytes(out) + 3 > limit) {
    n = Math.floor(n * 0.9);
    out = value.slice(0, n);
  }
  // Never end on half a surrogate pair.
  const last = out.charCodeAt(out.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) out = out.slice(0, -1);
  return out + "…";
}

/**
 * The copy: strings cut to `limit`, and entries kept while the running budget lasts. Object keys
 * are copied with defineProperty, so a `__proto__` key (JSON.parse makes them) stays a plain key.
 */
function capValue(value: unknown, limit: number, budget: { left: number }): unknown {
  if (typeof value === "string") {
    const cost = jsonBytes(value);
    if (cost <= limit) {
      budget.left -= cost;
      return value;
    }
    budget.left -= limit;
    return cutString(value, cost, limit);
  }
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    budget.left -= 2;
    for (let i = 0; i < value.length; i++) {
      if (budget.left <= 0) {
        out.push(`… ${value.length - i} more item${value.length - i === 1 ? "" : "s"}`);
        break;
      }
      out.push(capValue(value[i], limit, budget));
      budget.left -= 1;
    }
    return out;
  }
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    const keys = Object.keys(value);
    budget.left -= 2;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (budget.left <= 0) {
        out["…"] = `${keys.length - i} more key${keys.length - i === 1 ? "" : "s"}`;
        break;
      }
      budget.left -= jsonBytes(key) + 2;
      Object.defineProperty(out, key, { value: capValue((value as Record<string, unknown>)[key], limit, budget), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  // Objects and arrays returned above: what is left is a primitive (or a function, which JSON drops).
  budget.left -= value === undefined ? 0 : toText(value).length;
  return value;
}
