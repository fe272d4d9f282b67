import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The session cookie: `base64url(payload).base64url(HMAC-SHA256(secret, "session/v1\n" + first part))`
 * with payload `{ uid, v, exp }`. Stateless except for `v`: the user's `session_version`, bumped on
 * logout and password change, so every cookie issued before is refused from then on.
 */

export const SESSION_COOKIE = "whenthen_session";
export const SESSION_TTL_SECONDS = 30 * 24 * 60 * 60;

export interface SessionPayload {
  /** User id. */
  uid: string;
  /** The user's session_version when the cookie was issued. */
  v: number;
  /** Expiry, Unix seconds. */
  exp: number;
}

// SESSION_SECRET also signs file links (lib/files/signed-url.ts, "files/v1\n…"); a distinct prefix
// keeps a signature made for one from ever verifying as the other.
const mac = (secret: string, body: string): string => createHmac("sha256", secret).update(`session/v1\n${body}`).digest("base64url");

export function signSession(payload: SessionPayload, secret: string): string {
  const body = Buffer.from(JSON.stringify({ uid: payload.uid, v: payload.v, exp: payload.exp })).toString("base64url");
  return `${body}.${mac(secret, body)}`;
}

/** A payload that expires SESSION_TTL_SECONDS after `now`. */
export const newSessionPayload = (uid: string, version: number, now: Date): SessionPayload => ({
  uid,
  v: version,
  exp: Math.floor(now.getTime() / 1000) + SESSION_TTL_SECONDS,
});

/**
 * The payload of a cookie value signed with `secret` and not expired at `now`; null for anything
 * else. The signature is compared as text, in constant time: comparing decoded bytes would accept
 * a changed last character, since base64url's final character carries unused bits.
 */
export function readSession(value: string | undefined, secret: string, now: Date): SessionPayload | null {
  if (!value || value.length > 4096) return null;
  const dot = value.indexOf(".");
  if (dot <= 0 || dot !== value.lastIndexOf(".")) return null;
  const body = value.slice(0, dot);
  const given = Buffer.from(value.slice(dot + 1));
  const expected = Buffer.from(mac(secret, body));
  // The length of a valid signature is public (43 characters), so leaving early on it leaks nothing.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (!parsed || typeof parsed !== "object") return null;
  const { uid, v, exp } = parsed as Record<string, unknown>;
  if (typeof uid !== "string" || !uid || !Number.isSafeInteger(v) || !Number.isSafeInteger(exp)) return null;
  if ((exp as number) * 1000 <= now.getTime()) return null;
  return { uid, v: v as number, exp: exp as number };
}

/**
 * A signed, unexpired cookie whose version is the user's current one. `currentVersion` returns null
 * for a user that no longer exists.
 */
export function verifySession(
  value: string | undefined,
  opts: { secret: string; now: Date; currentVersion(uid: string): number | null },
): SessionPayload | null {
  const payload = readSession(value, opts.secret, opts.now);
  if (!payload) return null;
  const current = opts.currentVersion(payload.uid);
  // Only the current version is good: lower ones were revoked, higher ones were never issued.
  return current !== null && payload.v === current ? payload : null;
}

export interface CookieOptions {
  /** Set when PUBLIC_URL is https, so the browser never sends the cookie in clear text. */
  secure: boolean;
}

export const sessionCookieOptions = (publicUrl: string): CookieOptions => ({ secure: publicUrl.toLowerCase().startsWith("https:") });

/** The Set-Cookie header value for a fresh session. */
export function sessionSetCookie(value: string, opts: CookieOptions): string {
  return [`${SESSION_COOKIE}=${value}`, `Max-Age=${SESSION_TTL_SECONDS}`, "Path=/", "HttpOnly", "SameSite=Lax", ...(opts.secure ? ["Secure"] : [])].join("; ");
}

/** The Set-Cookie header value that removes the session cookie. */
export function clearSessionCookie(opts: CookieOptions): string {
  return [`${SESSION_COOKIE}=`, "Max-Age=0", "Path=/", "HttpOnly", "SameSite=Lax", ...(opts.secure ? ["Secure"] : [])].join("; ");
}

/** The value of one cookie in a `Cookie` request header (first occurrence wins, like browsers send them). */
export function cookieFromHeader(header: string | null | undefined, name: string = SESSION_COOKIE): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
