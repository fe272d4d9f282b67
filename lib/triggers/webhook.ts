import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { parseJsonBounded } from "../core/json";
import { LIMITS } from "../core/limits";
import { field } from "../plugin";
import type { HookRequest, RequestTrigger } from "./types";

export const webhookConfigSchema = z.strictObject({
  /** Header carrying the signature, e.g. X-Hub-Signature-256. */
  secret_header: field(z.string().trim().min(1).max(100).optional(), {
    label: "Signature header",
    kind: "text",
    preview: "webhookUrl",
    placeholder: "X-Hub-Signature-256",
    help: "Optional. With a secret, requests must carry an HMAC-SHA256 of the raw body in this header (hex, optionally prefixed sha256=).",
  }),
  /** Shared secret for HMAC-SHA256 of the raw body. May be `{{secrets.NAME}}`. */
  hmac_secret: field(z.string().min(1).max(500).optional(), {
    label: "HMAC secret",
    kind: "secret",
    placeholder: "{{secrets.WEBHOOK_SECRET}}",
    help: "Optional. Use a secret reference so the value is not stored in the applet.",
  }),
});
export type WebhookConfig = z.infer<typeof webhookConfigSchema>;

/** Headers never stored in an event: they carry credentials. */
const DROPPED_HEADERS = new Set(["authorization", "cookie", "proxy-authorization"]);

export type WebhookRequest = HookRequest;

/** Builds the event payload (spec ingredients: body, headers, query, method, received_at). Pure. */
export function webhookPayload(req: WebhookRequest): Record<string, unknown> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    const key = k.toLowerCase();
    if (v === undefined || DROPPED_HEADERS.has(key)) continue;
    headers[key] = Array.isArray(v) ? v.join(", ") : v;
  }
  return { body: parseBody(req.rawBody, req.contentType, req.method, req.query), headers, query: req.query, method: req.method, received_at: req.receivedAt };
}

/**
 * JSON, urlencoded and multipart (fields only) become objects; anything else, and a body that does
 * not parse as its content type says, is kept as `{ raw }` so nothing is lost. A GET has the query
 * as its body, so simple services that can only GET still pass ingredients.
 */
export function parseBody(raw: Buffer, contentType: string, method: string, query: Record<string, string | string[]>): unknown {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  if (raw.length === 0) return method === "GET" ? { ...query } : {};
  const text = raw.toString("utf8");
  // Too deep or too many keys to be ingredients: kept as text, never a 500 and never a second of
  // the web process's time.
  const tooMany = { raw: rawText(text), parse_error: `more than ${LIMITS.payloadKeys} fields` };
  if (type === "application/json" || type.endsWith("+json")) {
    const parsed = parseJsonBounded(text, { maxKeys: LIMITS.payloadKeys });
    if (parsed.ok) return parsed.value;
    return { raw: rawText(text), parse_error: parsed.reason.startsWith("invalid JSON") ? "invalid JSON" : parsed.reason };
  }
  if (type === "application/x-www-form-urlencoded") {
    if (countOf(text, "&") >= LIMITS.payloadKeys) return tooMany;
    return searchParamsToObject(new URLSearchParams(text));
  }
  if (type === "multipart/form-data") {
    const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
    if (boundary) {
      if (countOf(text, `--${boundary}`) > LIMITS.payloadKeys + 1) return tooMany;
      return parseMultipartFields(text, boundary);
    }
  }
  return { raw: rawText(text) };
}

/**
 * A stored payload holds at most 64 KB, so text past that is cut here, before it is serialized
 * and capped (escaping a megabyte of quotes costs the web process more than everything else).
 */
const rawText = (text: string): string => (text.length > LIMITS.storedPayloadBytes ? text.slice(0, LIMITS.storedPayloadBytes) : text);

/** Occurrences of `needle`, stopping early past the payload key bound. */
function countOf(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0 && n <= LIMITS.payloadKeys + 1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

export function searchParamsToObject(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of params) {
    if (k === "__proto__") continue;
    const prev = out[k];
    // Pushed, not copied: a form repeating one field 10,000 times stays linear.
    if (prev === undefined) out[k] = v;
    else if (Array.isArray(prev)) prev.push(v);
    else out[k] = [prev, v];
  }
  return out;
}

/** Text fields of a multipart body; file parts are listed by name only (webhooks store no files). */
function parseMultipartFields(text: string, boundary: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const part of text.split(`--${boundary}`)) {
    const sep = part.indexOf("\r\n\r\n");
    if (sep < 0) continue;
    const head = part.slice(0, sep);
    const name = /name="([^"]*)"/i.exec(head)?.[1];
    if (!name || name === "__proto__") continue;
    const filename = /filename="([^"]*)"/i.exec(head)?.[1];
    const value = part.slice(sep + 4).replace(/\r\n$/, "");
    out[name] = filename !== undefined ? { filename, size: Buffer.byteLength(value) } : value;
  }
  return out;
}

/** HMAC-SHA256 of the raw body, hex, accepted with or without a `sha256=` prefix. Constant time. */
export function verifySignature(rawBody: Buffer, secret: string, header: string | undefined): boolean {
  if (!header) return false;
  const given = header.trim().replace(/^sha256=/i, "");
  const expected = createHmac("sha256", secret).update(rawBody).digest("hex");
  const a = Buffer.from(given.toLowerCase());
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const webhookTrigger: RequestTrigger<WebhookConfig, "webhook"> = {
  type: "webhook",
  feed: "http",
  label: "Webhook",
  description: "A URL you POST (or GET) to from anywhere. The body becomes ingredients.",
  configSchema: webhookConfigSchema,
  exampleConfig: { secret_header: "X-Hub-Signature-256", hmac_secret: "{{secrets.WEBHOOK_SECRET}}" },
  ingredients: [
    { name: "body", description: "The parsed request body (JSON, form fields, or { raw } text)" },
    { name: "headers", description: "Request headers, lowercased (authorization and cookie dropped)" },
    { name: "query", description: "Query string parameters" },
    { name: "method", description: "POST or GET" },
    { name: "received_at", description: "When the request arrived (ISO UTC)" },
  ],
  sample: {
    body: { title: "Order #1042 paid", amount: 59.9, currency: "EUR", customer: { name: "Ada Lovelace", email: "ada@example.com" } },
    headers: { "content-type": "application/json", "user-agent": "curl/8.5.0" },
    query: {},
    method: "POST",
    received_at: "2026-03-07T13:00:00.000Z",
  },

  // With a signature header and a secret, a request must carry the body's HMAC; a webhook's
  // events are never deduped (each request is one event).
  handleRequest(config, req, ctx) {
    if (config.secret_header && config.hmac_secret) {
      const secret = ctx.render(config.hmac_secret);
      const given = req.headers[config.secret_header.toLowerCase()];
      if (!secret || !verifySignature(req.rawBody, secret, Array.isArray(given) ? given[0] : given)) {
        return { accept: false, status: 401, error: "signature mismatch" };
      }
    }
    return { accept: true, event: { dedupeKey: null, payload: webhookPayload(req) } };
  },
};
