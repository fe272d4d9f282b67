import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { dedupeKeyOf, dedupePathProblem } from "../../lib/webhooks/dedupe";
import { verifyRequest, type VerifyPreset, type VerifyRequest } from "../../lib/webhooks/verify";

const req = (over: Partial<VerifyRequest> & Pick<VerifyRequest, "rawBody" | "headers" | "secret">): VerifyRequest => ({ nowMs: Date.UTC(2026, 11, 1), ...over });
const ok = (preset: VerifyPreset, r: VerifyRequest) => verifyRequest(preset, r).ok;

describe("signature presets, with the test vectors each sender publishes", () => {
  it("GitHub: the example of 'Validating webhook deliveries'", () => {
    // docs.github.com: secret "It's a Secret to Everybody", payload "Hello, World!"
    const headers = { "x-hub-signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" };
    expect(ok("github", req({ rawBody: Buffer.from("Hello, World!"), headers, secret: "It's a Secret to Everybody" }))).toBe(true);
    expect(ok("github", req({ rawBody: Buffer.from("Hello, World?"), headers, secret: "It's a Secret to Everybody" }))).toBe(false);
    expect(ok("github", req({ rawBody: Buffer.from("Hello, World!"), headers: {}, secret: "It's a Secret to Everybody" }))).toBe(false);
    // GitHub always sends the prefix: a bare hex is not GitHub's format.
    expect(ok("github", req({ rawBody: Buffer.from("Hello, World!"), headers: { "x-hub-signature-256": "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" }, secret: "It's a Secret to Everybody" }))).toBe(false);
  });

  // api.slack.com "Verifying requests from Slack": the worked example.
  const slackBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
  const slackHeaders = { "x-slack-request-timestamp": "1531420618", "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503" };
  it("Slack: the documented example verifies at its own time, and is a replay 5 minutes later", () => {
    const base = { rawBody: Buffer.from(slackBody), headers: slackHeaders, secret: "8f742231b10e8888abcd99yyyzzz85a5" };
    expect(ok("slack", req({ ...base, nowMs: 1531420618_000 + 60_000 }))).toBe(true);
    const late = verifyRequest("slack", req({ ...base, nowMs: 1531420618_000 + 301_000 }));
    expect(late).toEqual({ ok: false, reason: expect.stringContaining("replay") });
    expect(ok("slack", req({ ...base, nowMs: 1531420618_000, secret: "8f742231b10e8888abcd99yyyzzz85a6" }))).toBe(false);
    expect(ok("slack", req({ ...base, headers: { ...slackHeaders, "x-slack-request-timestamp": "1531420619" }, nowMs: 1531420618_000 }))).toBe(false);
  });

  // Standard Webhooks' reference library test ("sign function works"), Apache-2.0.
  const stdHeaders = { "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330", "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" };
  it("Standard Webhooks / Svix: the reference vector, with and without whsec_, several signatures, and a replay", () => {
    const base = { rawBody: Buffer.from('{"test": 2432232314}'), headers: stdHeaders, nowMs: 1614265330_000 };
    expect(ok("standard", req({ ...base, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }))).toBe(true);
    expect(ok("standard", req({ ...base, secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }))).toBe(true);
    const several = { ...stdHeaders, "webhook-signature": `v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,x ${stdHeaders["webhook-signature"]}` };
    expect(ok("standard", req({ ...base, headers: several, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }))).toBe(true);
    expect(ok("standard", req({ ...base, nowMs: 1614265330_000 + 400_000, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }))).toBe(false);
    expect(ok("standard", req({ ...base, headers: { ...stdHeaders, "webhook-signature": "v1," }, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }))).toBe(false);
    const { "webhook-id": _, ...noId } = stdHeaders;
    expect(ok("standard", req({ ...base, headers: noId, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }))).toBe(false);
  });

  it("Stripe: t=…,v1=… over `t.body` keyed by the whole whsec_ secret, any of several v1, tolerance", () => {
    // Stripe publishes no fixed vector; this follows "Verify manually" step by step.
    const secret = "whsec_test_5d1c3b4a";
    const body = Buffer.from('{"id":"evt_1","object":"event","type":"payment_intent.succeeded"}');
    const t = 1764547200;
    const v1 = createHmac("sha256", secret).update(`${t}.${body.toString()}`).digest("hex");
    const now = t * 1000 + 10_000;
    expect(ok("stripe", req({ rawBody: body, secret, nowMs: now, headers: { "stripe-signature": `t=${t},v1=${v1},v0=6ffbb59b2300aae63f2` } }))).toBe(true);
    expect(ok("stripe", req({ rawBody: body, secret, nowMs: now, headers: { "stripe-signature": `t=${t},v1=${"0".repeat(64)},v1=${v1}` } }))).toBe(true);
    expect(ok("stripe", req({ rawBody: body, secret, nowMs: now, headers: { "stripe-signature": `t=${t + 1},v1=${v1}` } }))).toBe(false);
    expect(ok("stripe", req({ rawBody: body, secret, nowMs: now, headers: { "stripe-signature": `t=${t}` } }))).toBe(false);
    expect(ok("stripe", req({ rawBody: body, secret, nowMs: t * 1000 + 301_000, headers: { "stripe-signature": `t=${t},v1=${v1}` } }))).toBe(false);
    expect(ok("stripe", req({ rawBody: body, secret, nowMs: t * 1000 + 500_000, toleranceSeconds: 600, headers: { "stripe-signature": `t=${t},v1=${v1}` } }))).toBe(true);
  });

  it("Shopify: base64 HMAC of the raw body", () => {
    const body = Buffer.from('{"id":820982911946154508,"email":"jon@example.com"}');
    const sig = createHmac("sha256", "shpss_secret").update(body).digest("base64");
    expect(ok("shopify", req({ rawBody: body, secret: "shpss_secret", headers: { "x-shopify-hmac-sha256": sig } }))).toBe(true);
    expect(ok("shopify", req({ rawBody: body, secret: "shpss_other", headers: { "x-shopify-hmac-sha256": sig } }))).toBe(false);
    // The hex of the same HMAC is not Shopify's format.
    const hex = createHmac("sha256", "shpss_secret").update(body).digest("hex");
    expect(ok("shopify", req({ rawBody: body, secret: "shpss_secret", headers: { "x-shopify-hmac-sha256": hex } }))).toBe(false);
  });

  it("generic HMAC header: hex with or without sha256=, any case, on the header the user named", () => {
    const body = Buffer.from('{"a":1}');
    const hex = createHmac("sha256", "s3cret").update(body).digest("hex");
    expect(ok("hmac", req({ rawBody: body, secret: "s3cret", header: "X-Sig", headers: { "x-sig": hex } }))).toBe(true);
    expect(ok("hmac", req({ rawBody: body, secret: "s3cret", header: "X-Sig", headers: { "x-sig": `sha256=${hex.toUpperCase()}` } }))).toBe(true);
    expect(ok("hmac", req({ rawBody: body, secret: "s3cret", header: "X-Sig", headers: { "x-other": hex } }))).toBe(false);
  });

  it("bearer and basic compare the whole credential", () => {
    const rawBody = Buffer.from("");
    expect(ok("bearer", req({ rawBody, secret: "tok_123", headers: { authorization: "Bearer tok_123" } }))).toBe(true);
    expect(ok("bearer", req({ rawBody, secret: "tok_123", headers: { authorization: "Bearer tok_12" } }))).toBe(false);
    expect(ok("bearer", req({ rawBody, secret: "tok_123", headers: {} }))).toBe(false);
    const basic = `Basic ${Buffer.from("ada:pw:with:colons").toString("base64")}`;
    expect(ok("basic", req({ rawBody, secret: "ada:pw:with:colons", headers: { authorization: basic } }))).toBe(true);
    expect(ok("basic", req({ rawBody, secret: "ada:pw", headers: { authorization: basic } }))).toBe(false);
  });
});

describe("dedupe keys", () => {
  it("read a header or a body path; absent, empty or non-scalar values give no key", () => {
    expect(dedupeKeyOf({ header: "X-GitHub-Delivery" }, { "x-github-delivery": "72d3162e-cc78" }, {})).toBe("72d3162e-cc78");
    expect(dedupeKeyOf({ path: "id" }, {}, { id: "evt_1" })).toBe("evt_1");
    expect(dedupeKeyOf({ path: "data.object.id" }, {}, { data: { object: { id: 42 } } })).toBe("42");
    expect(dedupeKeyOf({ path: "items.0.id" }, {}, { items: [{ id: "a" }] })).toBe("a");
    expect(dedupeKeyOf({ path: "id" }, {}, { id: { nested: 1 } })).toBeNull();
    expect(dedupeKeyOf({ path: "id" }, {}, { id: "  " })).toBeNull();
    expect(dedupeKeyOf({ path: "missing.id" }, {}, { id: "x" })).toBeNull();
    expect(dedupeKeyOf({ path: "toString" }, {}, {})).toBeNull();
    expect(dedupeKeyOf({ header: "Idempotency-Key" }, {}, {})).toBeNull();
  });

  it("a path that cannot exist is refused with a reason", () => {
    expect(dedupePathProblem("data.object.id")).toBeNull();
    expect(dedupePathProblem("")).toMatch(/empty/);
    expect(dedupePathProblem("a..b")).toMatch(/empty part/);
    expect(dedupePathProblem("__proto__.x")).toMatch(/__proto__/);
    expect(dedupePathProblem("body['id']")).toMatch(/not a field name/);
  });
});
