import { describe, expect, it } from "vitest";
import { getTrigger } from "@/lib/triggers";
import { TEST_EVENT_USER_AGENT, freshTestPayload, parseSample } from "@/lib/ui/sample";

/** Issue #20, the pure parts: what the screens compute before they show or send anything. */

describe("#20: test events and samples", () => {
  const webhookSample = getTrigger("webhook").sample as Record<string, unknown>;

  it("#20.5: Send test event stamps the sample's received_at and user-agent with this send", () => {
    const now = new Date("2026-12-01T10:14:00.000Z");
    const sent = freshTestPayload(structuredClone(webhookSample), webhookSample, now);
    expect(sent.received_at).toBe("2026-12-01T10:14:00.000Z");
    expect((sent.headers as Record<string, string>)["user-agent"]).toBe(TEST_EVENT_USER_AGENT);
    // The rest is the sample as it was.
    expect(sent.body).toEqual(webhookSample.body);
    expect((sent.headers as Record<string, string>)["content-type"]).toBe("application/json");
  });

  it("#20.5: what the user typed in is sent as typed", () => {
    const typed = { ...webhookSample, received_at: "2025-01-01T00:00:00.000Z", headers: { "user-agent": "Stripe/1.0" } };
    const sent = freshTestPayload(typed, webhookSample, new Date("2026-12-01T10:14:00.000Z"));
    expect(sent.received_at).toBe("2025-01-01T00:00:00.000Z");
    expect((sent.headers as Record<string, string>)["user-agent"]).toBe("Stripe/1.0");
  });

  it("#20.1: a typed sample must be a JSON object, and the message says why", () => {
    expect(parseSample('{"title": "x"}')).toEqual({ ok: true, value: { title: "x" } });
    expect(parseSample("[1]")).toMatchObject({ ok: false, error: expect.stringContaining("JSON object") });
    expect(parseSample("{title: 1}")).toMatchObject({ ok: false, error: expect.stringMatching(/^Not valid JSON/) });
  });
});
