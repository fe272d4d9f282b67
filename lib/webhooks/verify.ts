import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/**
 * Who may call a webhook: the signature schemes of the senders people use, a bearer token, basic
 * auth, or today's generic HMAC header. Pure: the raw body, the headers, the secret and the time in;
 * a verdict out. Every comparison is constant-time and every signature is over the raw bytes.
 */
export const VERIFY_PRESETS = ["none", "hmac", "github", "stripe", "slack", "shopify", "standard", "bearer", "basic"] as const;
export type VerifyPreset = (typeof VERIFY_PRESETS)[number];

export type Headers = Record<string, string | string[] | undefined>;

export interface VerifyRequest {
  rawBody: Buffer;
  /** Node's lowercased request headers. */
  headers: Headers;
  /** The signing secret, token, or `user:password` for basic. */
  secret: string;
  /** For `hmac`: the header carrying the hex HMAC-SHA256 of the body. */
  header?: string;
  /** For the timestamped schemes (stripe, slack, standard): how far the timestamp may be from now. */
  toleranceSeconds?: number;
  nowMs: number;
}

/** `reason` is for the log, never for the sender: a refused request gets a 401 with an empty body. */
export type VerifyResult = { ok: true } | { ok: false; reason: string };

export const DEFAULT_TOLERANCE_SECONDS = 300;

export interface PresetInfo {
  label: string;
  /** One line for the editor. */
  help: string;
  /** The header a sender's redelivery repeats, or the body path of the sender's event id. */
  dedupe?: { header: string } | { path: string };
  /** Whether the scheme has a replay window. */
  timestamped: boolean;
}

export const PRESETS: Record<VerifyPreset, PresetInfo> = {
  none: { label: "None", help: "Anyone with the URL may call it (the URL's token is the only secret).", timestamped: false },
  hmac: { label: "HMAC-SHA256 header", help: "A header you name carries the hex HMAC-SHA256 of the raw body (optionally prefixed sha256=).", timestamped: false },
  github: { label: "GitHub", help: "X-Hub-Signature-256: sha256=<hex HMAC of the body>. Duplicates are detected by X-GitHub-Delivery.", dedupe: { header: "x-github-delivery" }, timestamped: false },
  stripe: { label: "Stripe", help: "Stripe-Signature: t=<time>,v1=<hex HMAC of t.body> with your whsec_ endpoint secret; duplicates by the event's id.", dedupe: { path: "id" }, timestamped: true },
  slack: { label: "Slack", help: "X-Slack-Signature: v0=<hex HMAC of v0:timestamp:body> with X-Slack-Request-Timestamp, within 5 minutes.", timestamped: true },
  shopify: { label: "Shopify", help: "X-Shopify-Hmac-Sha256: base64 HMAC of the body with the app's secret; duplicates by X-Shopify-Webhook-Id.", dedupe: { header: "x-shopify-webhook-id" }, timestamped: false },
  standard: { label: "Standard Webhooks / Svix", help: "webhook-id, webhook-timestamp and webhook-signature (v1,<base64>) with a whsec_ key; duplicates by webhook-id.", dedupe: { header: "webhook-id" }, timestamped: true },
  bearer: { label: "Bearer token", help: "Authorization: Bearer <token>.", timestamped: false },
  basic: { label: "Basic auth", help: "Authorization: Basic with the secret as user:password.", timestamped: false },
};

export function verifyRequest(preset: VerifyPreset, req: VerifyRequest): VerifyResult {
  switch (preset) {
    case "none":
      return { ok: true };
    case "hmac":
      return verifyHmacHeader(req);
    case "github":
      return verifyHexHeader(req, "x-hub-signature-256", "sha256=", req.rawBody);
    case "stripe":
      return verifyStripe(req);
    case "slack":
      return verifySlack(req);
    case "shopify": {
      const given = header(req.headers, "x-shopify-hmac-sha256");
      if (!given) return fail("no X-Shopify-Hmac-Sha256 header");
      return sameBase64(given, hmac(req.secret, req.rawBody).toString("base64")) ? { ok: true } : fail("X-Shopify-Hmac-Sha256 does not match");
    }
    case "standard":
      return verifyStandard(req);
    case "bearer": {
      const auth = header(req.headers, "authorization");
      const m = auth ? /^Bearer\s+(.+)$/i.exec(auth.trim()) : null;
      if (!m) return fail("no Authorization: Bearer header");
      return safeEqualText(m[1]!, req.secret) ? { ok: true } : fail("wrong bearer token");
    }
    case "basic": {
      const auth = header(req.headers, "authorization");
      const m = auth ? /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(auth.trim()) : null;
      if (!m) return fail("no Authorization: Basic header");
      return safeEqualText(Buffer.from(m[1]!, "base64").toString("utf8"), req.secret) ? { ok: true } : fail("wrong user or password");
    }
  }
}

function verifyHmacHeader(req: VerifyRequest): VerifyResult {
  if (!req.header) return fail("no signature header is configured");
  return verifyHexHeader(req, req.header.toLowerCase(), "sha256=", req.rawBody, true);
}

/** `<prefix><hex HMAC-SHA256>` in one header; the prefix optional where `prefixOptional`. */
function verifyHexHeader(req: VerifyRequest, name: string, prefix: string, signed: Buffer, prefixOptional = false): VerifyResult {
  const given = header(req.headers, name);
  if (!given) return fail(`no ${name} header`);
  let hex = given.trim();
  if (hex.toLowerCase().startsWith(prefix)) hex = hex.slice(prefix.length);
  else if (!prefixOptional) return fail(`${name} does not start with ${prefix}`);
  return sameHex(hex, hmac(req.secret, signed).toString("hex")) ? { ok: true } : fail(`${name} does not match`);
}

/** Stripe-Signature: `t=…,v1=…[,v1=…][,v0=…]`, HMAC of `${t}.${body}` keyed by the whole whsec_ secret. */
function verifyStripe(req: VerifyRequest): VerifyResult {
  const given = header(req.headers, "stripe-signature");
  if (!given) return fail("no Stripe-Signature header");
  let t: string | undefined;
  const v1: string[] = [];
  for (const part of given.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") t = value;
    else if (key === "v1") v1.push(value);
  }
  if (!t || v1.length === 0) return fail("Stripe-Signature has no t= or no v1=");
  const window = checkTimestamp(t, req);
  if (!window.ok) return window;
  const expected = hmac(req.secret, Buffer.concat([Buffer.from(`${t}.`), req.rawBody])).toString("hex");
  // Every v1 is compared (no early exit), so the time taken does not say which one matched.
  let match = false;
  for (const sig of v1) match = sameHex(sig, expected) || match;
  return match ? { ok: true } : fail("no v1 signature in Stripe-Signature matches");
}

function verifySlack(req: VerifyRequest): VerifyResult {
  const ts = header(req.headers, "x-slack-request-timestamp");
  if (!ts) return fail("no X-Slack-Request-Timestamp header");
  const window = checkTimestamp(ts, req);
  if (!window.ok) return window;
  return verifyHexHeader(req, "x-slack-signature", "v0=", Buffer.concat([Buffer.from(`v0:${ts.trim()}:`), req.rawBody]));
}

/** Standard Webhooks (Svix): base64 HMAC of `${id}.${timestamp}.${body}`, key = base64 after `whsec_`. */
function verifyStandard(req: VerifyRequest): VerifyResult {
  const id = header(req.headers, "webhook-id");
  const ts = header(req.headers, "webhook-timestamp");
  const given = header(req.headers, "webhook-signature");
  if (!id || !ts || !given) return fail("webhook-id, webhook-timestamp or webhook-signature is missing");
  const window = checkTimestamp(ts, req);
  if (!window.ok) return window;
  const key = Buffer.from(req.secret.startsWith("whsec_") ? req.secret.slice(6) : req.secret, "base64");
  if (key.length === 0) return fail("the secret is not a base64 whsec_ key");
  const expected = hmac(key, Buffer.concat([Buffer.from(`${id}.${ts.trim()}.`), req.rawBody])).toString("base64");
  let match = false;
  for (const versioned of given.split(" ")) {
    const comma = versioned.indexOf(",");
    if (comma < 0 || versioned.slice(0, comma) !== "v1") continue;
    match = sameBase64(versioned.slice(comma + 1), expected) || match;
  }
  return match ? { ok: true } : fail("no v1 signature in webhook-signature matches");
}

function checkTimestamp(raw: string, req: VerifyRequest): VerifyResult {
  if (!/^\d{1,12}$/.test(raw.trim())) return fail(`timestamp "${raw.slice(0, 20)}" is not a number of seconds`);
  const tolerance = req.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const skew = Math.abs(req.nowMs / 1000 - Number(raw.trim()));
  return skew <= tolerance ? { ok: true } : fail(`timestamp is ${Math.round(skew)} s away from now (allowed ${tolerance} s): a replay or a wrong clock`);
}

const hmac = (key: string | Buffer, data: Buffer): Buffer => createHmac("sha256", key).update(data).digest();

function header(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const fail = (reason: string): VerifyResult => ({ ok: false, reason });

/**
 * A signature against the expected one: constant time for the expected length, which the algorithm
 * fixes (a wrong length says nothing an attacker does not know). Hex is compared case-insensitively.
 */
const sameHex = (given: string, expected: string): boolean => sameFixed(given.trim().toLowerCase(), expected);
const sameBase64 = (given: string, expected: string): boolean => sameFixed(given.trim(), expected);

function sameFixed(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A credential of any length (a bearer token, user:password): both sides hashed first, so neither its length nor its content leaks through timing. */
function safeEqualText(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}
