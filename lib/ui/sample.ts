/**
 * Samples for testing an applet: the built-in one, an item "Fetch now" returned, a past event's
 * payload, or JSON typed by hand. Pure: the screens call these, tests call them directly.
 */

/** The user-agent a test event carries instead of the sample's made-up one. */
export const TEST_EVENT_USER_AGENT = "whenthen (Send test event)";

/**
 * The payload "Send test event" sends. Fields of the built-in sample that describe one delivery
 * (`received_at`, the sender's `user-agent`) are stamped with this send when they are still the
 * sample's made-up values: a test event received now says so, instead of 2026-03-07 and curl/8.5.0.
 * What the user typed in is sent as typed.
 */
export function freshTestPayload(payload: Record<string, unknown>, sample: Record<string, unknown>, now: Date): Record<string, unknown> {
  const out: Record<string, unknown> = { ...payload };
  if (typeof out.received_at === "string" && out.received_at === sample.received_at) out.received_at = now.toISOString();
  const headers = out.headers;
  const sampleHeaders = sample.headers as Record<string, unknown> | undefined;
  if (headers && typeof headers === "object" && !Array.isArray(headers) && sampleHeaders && typeof sampleHeaders === "object") {
    const h = { ...(headers as Record<string, unknown>) };
    if (h["user-agent"] !== undefined && h["user-agent"] === sampleHeaders["user-agent"]) h["user-agent"] = TEST_EVENT_USER_AGENT;
    out.headers = h;
  }
  return out;
}

export type ParsedSample = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** A sample typed as JSON: an object, or a message that says what is wrong and where. */
export function parseSample(text: string): ParsedSample {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `Not valid JSON: ${(err as Error).message}` };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return { ok: false, error: "The sample must be a JSON object ({ … }), the way the trigger's ingredients arrive." };
  return { ok: true, value: value as Record<string, unknown> };
}

/**
 * The applet page's curl line for a webhook: a POST of the sample's `body` as JSON (the sample the
 * user is testing with, so the line sends what the editor and "Send test event" use), or
 * `{"hello":"world"}` when the sample has no body. Quoted for a POSIX shell.
 */
export function webhookCurl(url: string, sample: Record<string, unknown>): string {
  const body = sample.body === undefined || sample.body === null ? { hello: "world" } : sample.body;
  const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
  return `curl -X POST ${quote(url)} -H 'content-type: application/json' -d ${quote(JSON.stringify(body))}`;
}
