import { z } from "zod";
import { field } from "../plugin";
import { ActionError } from "../core/errors";
import { isRetryableStatus, parseRetryAfter } from "./common";
import type { ActionPlugin } from "./types";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] as const;

export const httpConfigSchema = z.strictObject({
  url: field(z.string().trim().min(1, '"url" is empty (or rendered to an empty string); it is required').max(4096), { label: "URL", kind: "text", required: true, template: true, placeholder: "https://example.com/hook" }),
  method: field(z
    .string()
    .transform((m) => m.trim().toUpperCase())
    .pipe(z.enum(METHODS))
    .default("POST"), { label: "Method", kind: "select", options: METHODS.map((m) => ({ value: m, label: m })) }),
  headers: field(z.record(z.string(), z.string()).default({}), { label: "Headers", kind: "json", template: true, credential: "authHeaders", help: 'A JSON object, e.g. {"Authorization": "Bearer {{secrets.API_TOKEN}}"}' }),
  /** A string (a template) or a JSON value whose string leaves are templates. */
  body: field(z.unknown().optional(), { label: "Body", kind: "textarea", template: true, jsonMode: true, help: "JSON (typed): a JSON value, serialized when sent; in it a string that is exactly one {{…}} keeps its type (a number stays a number, an object an object). Text: sent as written." }),
  content_type: field(z.string().trim().min(1).default("application/json"), { label: "Content type", kind: "text", placeholder: "application/json" }),
});
export type HttpConfig = z.infer<typeof httpConfigSchema>;

const TIMEOUT_MS = 20_000;

export const httpAction: ActionPlugin<HttpConfig> = {
  type: "http",
  label: "HTTP request",
  description: "Call any URL. 5xx, 429 and network errors are retried; other 4xx fail at once.",
  configSchema: httpConfigSchema,
  // The body is the alert as JSON, with what identifies it.
  alert: { label: "HTTP request", messageFields: ["body"], fill: (msg) => ({ body: { title: msg.title, text: msg.text, link: msg.link, ...msg.facts } }) },
  exampleConfig: { url: "https://api.example.com/orders", method: "POST", headers: { "x-source": "whenthen" }, body: { title: "{{trigger.body.title}}" }, content_type: "application/json" },
  urlFields: ["url"],
  typedConfig: ["body"],
  async run(config, ctx) {
    let url: URL;
    try {
      url = new URL(config.url);
    } catch {
      throw new ActionError(`http: "${config.url}" is not a valid URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new ActionError(`http: only http and https URLs are allowed, got "${url.protocol}"`);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(config.headers)) {
      if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) throw new ActionError(`http: header "${k}" contains a line break`);
      headers[k.toLowerCase()] = v;
    }
    // A stable key per event and action, so a receiver that dedupes sees retries as one request.
    headers["idempotency-key"] ??= ctx.idempotencyKey;
    let body: string | undefined;
    if (config.body !== undefined && config.body !== null && config.method !== "GET" && config.method !== "HEAD") {
      body = typeof config.body === "string" ? config.body : JSON.stringify(config.body);
      headers["content-type"] ??= config.content_type;
    }
    const res = await ctx.http(url.toString(), { method: config.method, headers, body, timeoutMs: TIMEOUT_MS });
    const text = res.text();
    let parsed: unknown = text;
    if ((res.headers["content-type"] ?? "").includes("json") && !res.truncated) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    const output = { status: res.status, headers: res.headers, body: parsed, ...(res.truncated ? { truncated: true } : {}) };
    // 3xx here means a redirect the safe fetch did not follow (over the hop limit was an error already).
    if (res.status >= 200 && res.status < 400) return { output };
    const retryable = isRetryableStatus(res.status);
    throw new ActionError(`http: ${config.method} ${url.host} answered ${res.status}`, {
      retryable,
      retryAfterMs: retryable ? parseRetryAfter(res.headers["retry-after"], ctx.clock) : undefined,
      output,
    });
  },
};
