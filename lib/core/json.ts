import { LIMITS } from "./limits";

/**
 * JSON from outside (a webhook body, an API request, a provider's answer) with its shape bounded
 * before it is parsed:
 * - nesting: JSON.parse itself takes 10,000 levels in its stride, but everything after it walks
 *   values recursively (JSON.stringify, redaction, the sandbox, the stored-payload cap) and threw
 *   a RangeError deep inside the request: the sender saw a 500 and retried.
 * - object keys (optional): an object with 100,000 keys costs ~60 ms to parse and as much again to
 *   serialize, per request, on the web event loop, only to be cut to 64 KB when stored.
 * One pass over the text counts both, before JSON.parse is asked to do anything.
 */

export type JsonParse = { ok: true; value: unknown } | { ok: false; reason: string };

export function parseJsonBounded(text: string, opts: { maxDepth?: number; maxKeys?: number } = {}): JsonParse {
  const maxDepth = opts.maxDepth ?? LIMITS.jsonDepth;
  const maxKeys = opts.maxKeys ?? Infinity;
  const shape = jsonShape(text, maxDepth, maxKeys);
  if (shape === "deep") return { ok: false, reason: `nested deeper than ${maxDepth} levels` };
  if (shape === "wide") return { ok: false, reason: `more than ${maxKeys} object keys` };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, reason: `invalid JSON: ${(err as Error).message}` };
  }
}

/**
 * Brackets and colons outside strings: "deep" at the first level past `maxDepth`, "wide" at the
 * first key past `maxKeys`, else "ok". Malformed text is left for JSON.parse to describe.
 */
export function jsonShape(text: string, maxDepth: number, maxKeys = Infinity): "ok" | "deep" | "wide" {
  let depth = 0;
  let keys = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return "deep";
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x3a && ++keys > maxKeys) return "wide";
  }
  return "ok";
}

/** A JSON answer with the API's headers, for code outside a route (the request guard, auth refusals). */
export const jsonResponse = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "cache-control": "no-store", ...headers } });
