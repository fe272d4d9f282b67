import { z } from "zod";
import { parseJsonBounded } from "../core/json";
import { LIMITS } from "../core/limits";
import { field } from "../plugin";
import { dedupeKeyOf, dedupePathProblem, type DedupeSource } from "../webhooks/dedupe";
import { MAX_RESPOND_WAIT_SECONDS } from "../webhooks/respond";
import { checkSignature, signatureProblems } from "../webhooks/signature";
import { PRESETS, VERIFY_PRESETS, type VerifyPreset } from "../webhooks/verify";
import type { HookRequest, RequestTrigger } from "./types";

export const webhookConfigSchema = z
  .strictObject({
    /**
     * Who may call the hook: a sender's signature scheme, a bearer token, basic auth, or a generic
     * HMAC header. Unset keeps the first version's rule: `hmac` when a header and a secret are set.
     */
    verify: field(z.enum(VERIFY_PRESETS).optional(), {
      label: "Who may call it",
      kind: "select",
      preview: "webhookUrl",
      // One preset's help at a time: the chosen one's, or what the default does.
      options: VERIFY_PRESETS.filter((p) => p !== "none").map((p) => ({
        value: p,
        label: PRESETS[p].label,
        help: `${PRESETS[p].help} Checked on the raw body of every request; one that fails gets 401 and stores nothing.`,
      })),
      help: "(default) checks nothing beyond the URL's secret token, or the HMAC header below if you set one. Pick a sender to check its signature on every request.",
    }),
    /** Header carrying the signature, e.g. X-Hub-Signature-256 (generic `hmac` only). */
    secret_header: field(z.string().trim().min(1).max(100).optional(), {
      label: "Signature header",
      kind: "text",
      placeholder: "X-Signature",
      showWhen: { field: "verify", equals: ["hmac", ""] },
      help: "For the HMAC check: the header that carries the HMAC-SHA256 of the raw body (hex, optionally prefixed sha256=).",
    }),
    /** The signing secret, bearer token, or user:password. May be `{{secrets.NAME}}`. */
    hmac_secret: field(z.string().min(1).max(500).optional(), {
      label: "Secret",
      kind: "secret",
      placeholder: "{{secrets.WEBHOOK_SECRET}}",
      help: "The signing secret (Stripe and Standard Webhooks: the whsec_ key), the bearer token, or user:password for basic auth. Use a secret reference so the value is not stored in the applet.",
    }),
    /** How far a signed timestamp may be from now (Stripe, Slack, Standard Webhooks). */
    tolerance_seconds: field(z.number().int().min(1).max(86_400).optional(), {
      label: "Replay window (seconds)",
      kind: "number",
      placeholder: "300",
      showWhen: { field: "verify", equals: ["stripe", "slack", "standard"] },
      help: "A signed timestamp further than this from now is refused as a replay. Default 300.",
    }),
    /** A header whose value a redelivery repeats (Idempotency-Key, X-GitHub-Delivery). */
    dedupe_header: field(z.string().trim().min(1).max(100).regex(/^[A-Za-z0-9-]+$/, "is not a header name (letters, digits and -)").optional(), {
      label: "Dedupe header",
      kind: "text",
      placeholder: "Idempotency-Key",
      help: "Optional. Senders retry: a request repeating this header's value is answered with the first run and stores nothing. GitHub, Shopify and Standard Webhooks presets set it for you.",
    }),
    /** A path in the body whose value a redelivery repeats (`id` of a Stripe event). */
    dedupe_path: field(
      z
        .string()
        .trim()
        .max(200)
        .superRefine((path, ctx) => {
          const problem = dedupePathProblem(path);
          if (problem) ctx.addIssue({ code: "custom", message: problem });
        })
        .optional(),
      { label: "Dedupe body path", kind: "text", placeholder: "id", help: "Optional, instead of a header: a path in the JSON body (data.object.id). The Stripe preset uses id." },
    ),
    /** Wait up to this long for the run and answer with its data (else the durable 202 at once). */
    respond_wait_seconds: field(z.number().min(0.1).max(MAX_RESPOND_WAIT_SECONDS).optional(), {
      label: "Wait for the run (seconds)",
      kind: "number",
      placeholder: "off",
      help: `Optional, at most ${MAX_RESPOND_WAIT_SECONDS}. Answer with the run's data when it finishes within this time, else 202 with the run id as usual. Leave empty for the immediate 202.`,
    }),
    respond_status: field(z.number().int().min(200).max(599).optional(), {
      label: "Response status",
      kind: "number",
      placeholder: "200",
      help: "The status of that answer when the run succeeded or was skipped (a failed run answers 502 with its id).",
    }),
    /** A template over trigger, steps[i].output, vars, ai and run. */
    respond_body: field(z.string().max(10_000).optional(), {
      label: "Response body",
      kind: "textarea",
      template: true,
      placeholder: '{"reply": "{{steps[0].output.body}}"}',
      help: "A template over trigger, steps[0].output, vars, ai and run (id, status). Default: the run id and status as JSON.",
    }),
    respond_content_type: field(
      z
        .string()
        .trim()
        .max(100)
        .regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, "is not a media type (application/json, text/plain; charset=utf-8)")
        .optional(),
      { label: "Response content type", kind: "text", placeholder: "application/json" },
    ),
  })
  .superRefine((c, ctx) => {
    for (const p of signatureProblems(c, presetOf(c))) ctx.addIssue({ code: "custom", path: [p.path], message: p.message });
    if (c.dedupe_header && c.dedupe_path) ctx.addIssue({ code: "custom", path: ["dedupe_path"], message: "name a dedupe header or a body path, not both" });
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

/** The check a config asks for; without `verify`, the first version's rule (header + secret = HMAC). */
export function presetOf(c: Pick<WebhookConfig, "verify" | "secret_header" | "hmac_secret">): VerifyPreset {
  if (c.verify) return c.verify;
  return c.secret_header && c.hmac_secret ? "hmac" : "none";
}

/** Where a redelivery's key is read: the config's header or path, else the preset's default. */
export function dedupeSourceOf(c: WebhookConfig): DedupeSource | null {
  if (c.dedupe_header) return { header: c.dedupe_header };
  if (c.dedupe_path) return { path: c.dedupe_path };
  return PRESETS[presetOf(c)].dedupe ?? null;
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

  // The configured check first (a refusal is an empty 401: nothing for a forger to learn; the
  // reason goes to the owner's log), then the event, keyed for dedupe when the sender repeats one.
  handleRequest(config, req, ctx) {
    const preset = presetOf(config);
    if (preset !== "none") {
      const verdict = checkSignature(preset, config, req, (t) => ctx.render(t), ctx.nowMs());
      if (!verdict.ok) return { accept: false, status: 401, error: "", reason: `${preset}: ${verdict.reason}` };
    }
    const payload = webhookPayload(req);
    const source = dedupeSourceOf(config);
    const respond = config.respond_wait_seconds ? config : undefined;
    return { accept: true, event: { dedupeKey: source ? dedupeKeyOf(source, req.headers, payload.body) : null, payload }, respond };
  },
};
