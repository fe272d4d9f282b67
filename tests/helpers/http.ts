import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll } from "vitest";

/**
 * The outside services the actions talk to, mocked at their boundary with msw. The handlers act
 * like the real services on the points the actions depend on (Slack's plain "ok", Discord's 2,000
 * character cap and `?wait=true` answer, ntfy's JSON publishing, Pushover's form API and its
 * `errors` array), so a malformed request fails here as it would in production.
 *
 * Every request a handler receives is recorded in `sent`, in arrival order.
 */

export interface SentRequest {
  service: "slack" | "discord" | "ntfy" | "pushover" | "status";
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

export const sent: SentRequest[] = [];

export const sentTo = (service: SentRequest["service"]): SentRequest[] => sent.filter((r) => r.service === service);

async function record(service: SentRequest["service"], request: Request): Promise<SentRequest> {
  const entry: SentRequest = {
    service,
    url: request.url,
    method: request.method,
    headers: Object.fromEntries(request.headers.entries()),
    body: await request.text(),
  };
  sent.push(entry);
  return entry;
}

function parseJsonObject(body: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(body);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export const SLACK_WEBHOOK = "https://hooks.slack.com/services/T000/B000/XXXXXXXX";
export const DISCORD_WEBHOOK = "https://discord.com/api/webhooks/1234567890/token-abc";

let discordMessageId = 1000;

export const handlers = [
  http.post("https://hooks.slack.com/services/:team/:bot/:secret", async ({ request }) => {
    const { body } = await record("slack", request);
    const payload = parseJsonObject(body);
    if (!payload) return new HttpResponse("invalid_payload", { status: 400, headers: { "content-type": "text/plain" } });
    if (typeof payload.text !== "string" || payload.text.trim() === "") {
      return new HttpResponse("no_text", { status: 400, headers: { "content-type": "text/plain" } });
    }
    return new HttpResponse("ok", { status: 200, headers: { "content-type": "text/plain" } });
  }),

  http.post("https://discord.com/api/webhooks/:id/:token", async ({ request }) => {
    const { body } = await record("discord", request);
    const payload = parseJsonObject(body);
    const content = payload?.content;
    if (typeof content !== "string" || content.trim() === "") {
      return HttpResponse.json({ message: "Cannot send an empty message", code: 50006 }, { status: 400 });
    }
    if (content.length > 2000) {
      return HttpResponse.json(
        { message: "Invalid Form Body", code: 50035, errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH" }] } } },
        { status: 400 },
      );
    }
    if (new URL(request.url).searchParams.get("wait") !== "true") return new HttpResponse(null, { status: 204 });
    return HttpResponse.json({ id: String(++discordMessageId), content, channel_id: "42" });
  }),

  http.post("https://ntfy.sh/", async ({ request }) => {
    const { body } = await record("ntfy", request);
    const payload = parseJsonObject(body);
    if (!payload || typeof payload.topic !== "string" || !/^[-_A-Za-z0-9]{1,64}$/.test(payload.topic)) {
      return HttpResponse.json({ code: 40009, http: 400, error: "invalid request: topic invalid" }, { status: 400 });
    }
    if (typeof payload.message === "string" && Buffer.byteLength(payload.message) > 4096) {
      return HttpResponse.json({ code: 41301, http: 413, error: "message too large" }, { status: 413 });
    }
    return HttpResponse.json({ id: "nt-" + sent.length, time: 1767225600, event: "message", topic: payload.topic, message: payload.message });
  }),

  http.post("https://api.pushover.net/1/messages.json", async ({ request }) => {
    const { body } = await record("pushover", request);
    const form = new URLSearchParams(body);
    const errors: string[] = [];
    if (!form.get("token")) errors.push("application token is invalid");
    if (!form.get("user")) errors.push("user identifier is invalid");
    const message = form.get("message") ?? "";
    if (message === "") errors.push("message cannot be blank");
    if (Array.from(message).length > 1024) errors.push("message is too long");
    if (form.get("priority") === "2" && (!form.get("retry") || !form.get("expire"))) errors.push("retry and expire are required for emergency priority");
    if (errors.length) return HttpResponse.json({ status: 0, errors, request: "req-bad" }, { status: 400 });
    return HttpResponse.json({ status: 1, request: "req-" + sent.length });
  }),

  // Any status on demand; `?retry_after=` adds a Retry-After header.
  http.all("https://status.test/status/:code", async ({ request, params }) => {
    await record("status", request);
    const code = Number(params.code);
    const retryAfter = new URL(request.url).searchParams.get("retry_after");
    return new HttpResponse(`status ${code}`, {
      status: code,
      headers: { "content-type": "text/plain", ...(retryAfter ? { "retry-after": retryAfter } : {}) },
    });
  }),
];

export const server = setupServer(...handlers);

/** Starts the mock server for the calling test file; any request without a handler fails the test. */
export function useHttpMocks(): void {
  beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
  afterEach(() => {
    server.resetHandlers();
    sent.length = 0;
  });
  afterAll(() => server.close());
}
