import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Signed links to stored event files: `GET /api/files/events/<eventId>/<filename>?exp=&sig=`.
 * The signature is an HMAC-SHA256 with SESSION_SECRET over event id, file name and expiry, so a
 * link can be handed to an action (Slack, email) without a session, and cannot be bent to
 * another file or a later expiry.
 */

export const FILE_URL_TTL_MS = 24 * 60 * 60 * 1000;

/** The signed message. Newline-separated: neither an event id nor a sanitized file name holds one. */
const payload = (eventId: string, filename: string, exp: number): string => `files/v1\n${eventId}\n${filename}\n${exp}`;

export function signFile(secret: string, eventId: string, filename: string, exp: number): string {
  return createHmac("sha256", secret).update(payload(eventId, filename, exp)).digest("base64url");
}

/** Path and query (no origin) of the link; `exp` is in Unix seconds. */
export function signedFilePath(secret: string, eventId: string, filename: string, now: Date, ttlMs = FILE_URL_TTL_MS): string {
  const exp = Math.floor((now.getTime() + ttlMs) / 1000);
  const sig = signFile(secret, eventId, filename, exp);
  return `/api/files/events/${encodeURIComponent(eventId)}/${encodeURIComponent(filename)}?exp=${exp}&sig=${sig}`;
}

/** The absolute link built on PUBLIC_URL, as an action would pass it along. */
export function signedFileUrl(
  config: { publicUrl: string; sessionSecret: string },
  eventId: string,
  filename: string,
  now: Date,
  ttlMs = FILE_URL_TTL_MS,
): string {
  return config.publicUrl.replace(/\/+$/, "") + signedFilePath(config.sessionSecret, eventId, filename, now, ttlMs);
}

export type SignatureCheck = "ok" | "bad" | "expired";

/** Constant-time comparison; an expired link is refused even with a good signature. */
export function verifyFileSignature(
  secret: string,
  eventId: string,
  filename: string,
  exp: string | null,
  sig: string | null,
  now: Date,
): SignatureCheck {
  if (!exp || !sig || !/^\d{1,12}$/.test(exp) || !/^[A-Za-z0-9_-]{43}$/.test(sig)) return "bad";
  const expected = Buffer.from(signFile(secret, eventId, filename, Number(exp)));
  const given = Buffer.from(sig);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "bad";
  return Number(exp) * 1000 <= now.getTime() ? "expired" : "ok";
}
