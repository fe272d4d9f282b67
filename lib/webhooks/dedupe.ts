import { createHash } from "node:crypto";
import type { Headers } from "./verify";

/**
 * Which value of a request says "I have sent this before": a header (Idempotency-Key,
 * X-GitHub-Delivery, webhook-id) or a path in the parsed body (`id` of a Stripe event). Pure.
 */
export type DedupeSource = { header: string } | { path: string };

/** Longest dedupe key stored as sent; a longer one is stored as its start and a hash of all of it (`storedDedupeKey`). */
export const MAX_DEDUPE_KEY = 200;
/** How much of a long key stays readable in the run log, before its hash. */
const LONG_KEY_SHOWN = 100;

const SEGMENT = /^(?:[A-Za-z_$][\w$-]*|\d+)$/;

/** Why a body path cannot name a value (null when it can): `data.object.id`, `items.0.id`. */
export function dedupePathProblem(path: string): string | null {
  if (path.trim() === "") return "is empty";
  const segments = path.split(".");
  for (const s of segments) {
    if (s === "") return `"${path}" has an empty part (two dots, or a dot at an end)`;
    if (s === "__proto__" || s === "constructor" || s === "prototype") return `"${path}" uses "${s}", which no payload field can be`;
    if (!SEGMENT.test(s)) return `"${path}": "${s}" is not a field name or an index (use dots: data.object.id)`;
  }
  if (segments.length > 10) return `"${path}" is deeper than 10 levels`;
  return null;
}

/** The key for this request, or null when the request carries none (then it is never a duplicate). */
export function dedupeKeyOf(source: DedupeSource, headers: Headers, body: unknown): string | null {
  let value: unknown;
  if ("header" in source) {
    const v = headers[source.header.toLowerCase()];
    value = Array.isArray(v) ? v[0] : v;
  } else {
    value = body;
    for (const s of source.path.split(".")) {
      if (value === null || typeof value !== "object" || !Object.hasOwn(value, s)) return null;
      value = (value as Record<string, unknown>)[s];
    }
  }
  if (typeof value === "number" && Number.isFinite(value)) value = String(value);
  if (typeof value !== "string") return null;
  const key = value.trim();
  return key === "" ? null : storedDedupeKey(key);
}

/**
 * A key as the events' unique index keeps it: a key of up to 200 characters as it is (every key
 * stored so far stays comparable), a longer one as its first 100 characters, `…sha256:` and the
 * SHA-256 of the whole key. Cutting it instead made two keys that share their first 200
 * characters one delivery, and the second was dropped as a duplicate.
 */
export function storedDedupeKey(key: string): string {
  if (key.length <= MAX_DEDUPE_KEY) return key;
  return `${key.slice(0, LONG_KEY_SHOWN)}…sha256:${createHash("sha256").update(key).digest("hex")}`;
}
