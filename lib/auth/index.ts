import type { App } from "../app";
import { newId } from "../core/ids";
import { clientIpOf } from "./client-ip";
import { createOriginPolicy, type OriginPolicy } from "./origin";
import { hashPassword, hashPasswordSync, verifyPassword } from "./password";
import { credentialsSchema } from "./policy";
import { FailureLimiter } from "./rate-limit";
import { bearerToken, createApiTokens, type ApiTokens } from "./tokens";
import {
  clearSessionCookie,
  cookieFromHeader,
  newSessionPayload,
  sessionCookieOptions,
  sessionSetCookie,
  signSession,
  readSession,
  verifySession,
} from "./session";

export interface SessionUser {
  userId: string;
  email: string;
  /** Set when the request came with an API token (it acts for the admin): which one, for "who saved this" (applet versions). */
  token?: { id: string; name: string };
}

export interface Credentials {
  /** Already normalised (trimmed, lower case). */
  email: string;
  password: string;
}

/** A refused login: retryAfterSeconds 0 for a wrong email or password, more when rate-limited (429). */
export type LoginResult = { ok: true; email: string; setCookie: string } | { ok: false; retryAfterSeconds: number };

export interface Auth {
  /** The signed-in user a request carries (its session cookie), or null. The API's session guard asks this. */
  sessionOf(req: Request): Promise<SessionUser | null>;
  /**
   * For a request with `Authorization: Bearer`: the admin it acts for, or the refusal to answer
   * with (401 bad or expired token, 403 read-only, 429 too many failures). null without the
   * header: the session decides. Which routes a token may not reach at all is the route's to say
   * (lib/api `sessionOnly`), not the path's.
   */
  tokenAccess(req: Request): Promise<SessionUser | Response | null>;
  /** First-run setup: creates the admin and signs it in; null when an admin already exists. */
  setup(creds: Credentials): Promise<{ email: string; setCookie: string } | null>;
  /** Checks the password with per-email and per-address failure limits. */
  login(creds: Credentials, ip: string): Promise<LoginResult>;
  /**
   * Settings' password change: checks the current password (failures count against the sign-in
   * limits), stores the new one and bumps the session version, so every other session ends; the
   * Set-Cookie returned keeps this one signed in with the new version.
   */
  changePassword(userId: string, input: { currentPassword: string; newPassword: string }, ip: string): Promise<PasswordChange>;
  /** Revokes every session of the cookie's user; the Set-Cookie that clears it. */
  logout(cookie: string | null | undefined): Promise<string>;
  /** The signed-in user for a `Cookie` request header, or null. */
  sessionFromCookieHeader(cookie: string | null | undefined): Promise<SessionUser | null>;
  /** The Host and Origin this app answers to (PUBLIC_URL's); the page gate checks pages with it. */
  origin: OriginPolicy;
  /** First start: create the admin from ADMIN_EMAIL and ADMIN_PASSWORD when both are set and no user exists. */
  ensureAdminFromEnv(): Promise<void>;
  hasUser(): Promise<boolean>;
}

/** A refused change names its field (`current_password`, `new_password`) like the form shows it; retryAfterSeconds > 0: rate-limited (429). */
export type PasswordChange = { ok: true; setCookie: string } | { ok: false; field: "current_password" | "new_password"; message: string; retryAfterSeconds: number };

export interface AuthOptions {
  /** Failed logins allowed per email and per client address in `windowMs` before 429. */
  loginFailures?: { max: number; windowMs: number };
  tokens?: ApiTokens;
}

export const LOGIN_FAILURES_DEFAULT = { max: 10, windowMs: 15 * 60 * 1000 };

type Services = Pick<App, "store" | "config" | "clock" | "log">;

/**
 * Single-admin authentication: first-run setup, login with argon2id, a signed session cookie that
 * logout revokes, and the admin from the environment. The HTTP side is lib/api/routes/session.ts.
 */
export function createAuth(app: Services, opts: AuthOptions = {}): Auth {
  const log = app.log.child("auth");
  const users = app.store.users;
  const cookieOpts = sessionCookieOptions(app.config.publicUrl);
  const origin = createOriginPolicy(app.config.publicUrl, app.config.devHosts);
  const limits = opts.loginFailures ?? LOGIN_FAILURES_DEFAULT;
  const byEmail = new FailureLimiter(limits);
  const byIp = new FailureLimiter(limits);
  const tokens = opts.tokens ?? createApiTokens(app);
  // Users are never deleted: once one exists, the answer stays yes without asking the database.
  let userExists = false;
  // A login for an unknown email verifies against this, so a miss costs what a wrong password
  // costs and the response time does not tell which emails exist. Made up front so the first miss
  // does not pay for it.
  const decoyHash = hashPassword(`decoy-${newId()}`);

  const tokenAccess = createTokenAccess({ clock: app.clock, users, tokens, byIp, log });

  const hasUser = async (): Promise<boolean> => (userExists ||= (await users.count()) > 0);

  async function sessionFromCookieHeader(cookie: string | null | undefined): Promise<SessionUser | null> {
    const value = cookieFromHeader(cookie);
    const now = app.clock.now();
    // The signature and expiry first (no database for a forged or stale cookie), then the
    // signer's current session version.
    const unverified = readSession(value, app.config.sessionSecret, now);
    if (!unverified) return null;
    const user = await users.byId(unverified.uid);
    const payload = verifySession(value, {
      secret: app.config.sessionSecret,
      now,
      currentVersion: (uid) => (user && user.id === uid ? user.sessionVersion : null),
    });
    return payload && user ? { userId: payload.uid, email: user.email } : null;
  }

  const setCookieFor = (userId: string, version: number): string =>
    sessionSetCookie(signSession(newSessionPayload(userId, version, app.clock.now()), app.config.sessionSecret), cookieOpts);

  /** First-run setup: the admin, signed in; null once an admin exists (the page stops existing). */
  async function setup(creds: Credentials): Promise<{ email: string; setCookie: string } | null> {
    if (await hasUser()) return null;
    const passwordHash = await hashPassword(creds.password);
    const now = app.clock.now().toISOString();
    const id = newId();
    if (!(await users.insertIfNone({ id, email: creds.email, passwordHash, now }))) return null;
    userExists = true;
    log.info("admin created through the setup page", { email: creds.email });
    return { email: creds.email, setCookie: setCookieFor(id, 1) };
  }

  async function login(creds: Credentials, ip: string): Promise<LoginResult> {
    const { email, password } = creds;
    const now = app.clock.now().getTime();
    const waitMs = Math.max(byEmail.retryAfterMs(email, now), byIp.retryAfterMs(ip, now));
    if (waitMs > 0) return { ok: false, retryAfterSeconds: Math.ceil(waitMs / 1000) };
    const user = await users.byEmail(email);
    let ok = false;
    if (user) ok = await verifyPassword(user.passwordHash, password);
    else await verifyPassword(await decoyHash, password);
    if (!user || !ok) {
      byEmail.fail(email, now);
      byIp.fail(ip, now);
      log.warn("failed sign-in", { email, ip });
      return { ok: false, retryAfterSeconds: 0 };
    }
    byEmail.reset(email);
    byIp.reset(ip);
    return { ok: true, email: user.email, setCookie: setCookieFor(user.id, user.sessionVersion) };
  }

  async function changePassword(userId: string, input: { currentPassword: string; newPassword: string }, ip: string): Promise<PasswordChange> {
    const user = await users.byId(userId);
    if (!user) return { ok: false, field: "current_password", message: "you are no longer signed in; sign in again", retryAfterSeconds: 0 };
    const now = app.clock.now().getTime();
    const waitMs = Math.max(byEmail.retryAfterMs(user.email, now), byIp.retryAfterMs(ip, now));
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      return { ok: false, field: "current_password", message: `too many wrong passwords; try again in ${Math.ceil(seconds / 60)} minute(s)`, retryAfterSeconds: seconds };
    }
    if (!(await verifyPassword(user.passwordHash, input.currentPassword))) {
      byEmail.fail(user.email, now);
      byIp.fail(ip, now);
      log.warn("password change refused: wrong current password", { email: user.email, ip });
      return { ok: false, field: "current_password", message: "current password is wrong", retryAfterSeconds: 0 };
    }
    if (input.newPassword === input.currentPassword) return { ok: false, field: "new_password", message: "new password is the same as the current one", retryAfterSeconds: 0 };
    const version = await users.setPassword(user.id, await hashPassword(input.newPassword), app.clock.now().toISOString());
    if (version === null) return { ok: false, field: "current_password", message: "you are no longer signed in; sign in again", retryAfterSeconds: 0 };
    log.info("password changed; every other session is signed out", { email: user.email });
    return { ok: true, setCookie: setCookieFor(user.id, version) };
  }

  async function logout(cookie: string | null | undefined): Promise<string> {
    const session = await sessionFromCookieHeader(cookie);
    // Bumping the version signs out every browser, not just this one: the cookie that was just
    // cleared here may have been copied elsewhere.
    if (session) await users.bumpSessionVersion(session.userId, app.clock.now().toISOString());
    return clearSessionCookie(cookieOpts);
  }

  return {
    origin,
    hasUser,
    sessionFromCookieHeader,
    sessionOf: (req) => sessionFromCookieHeader(req.headers.get("cookie")),
    setup,
    login,
    changePassword,
    logout,
    tokenAccess,
    async ensureAdminFromEnv() {
      const { adminEmail, adminPassword } = app.config;
      if (!adminEmail && !adminPassword) return;
      if (!adminEmail || !adminPassword) {
        log.warn("ADMIN_EMAIL and ADMIN_PASSWORD must both be set to create the admin; the setup page will ask instead");
        return;
      }
      if (await hasUser()) return;
      const checked = credentialsSchema(true).safeParse({ email: adminEmail, password: adminPassword });
      if (!checked.success) {
        // Starting anyway would show a setup page the operator did not expect; say what to fix.
        const problems = checked.error.issues.map((i) => `${i.path[0] === "email" ? "ADMIN_EMAIL" : "ADMIN_PASSWORD"} ${i.message}`);
        throw new Error(`auth: cannot create the admin from the environment: ${problems.join("; ")}`);
      }
      const { email } = checked.data;
      const now = app.clock.now().toISOString();
      if (await users.insertIfNone({ id: newId(), email, passwordHash: hashPasswordSync(adminPassword), now })) {
        log.info("admin created from ADMIN_EMAIL", { email });
      }
      userExists = true;
    },
  };
}

const refuse = (status: number, error: string, headers: Record<string, string> = {}): Response => Response.json({ error }, { status, headers: { "cache-control": "no-store", ...headers } });

interface TokenAccessDeps {
  clock: Services["clock"];
  users: Services["store"]["users"];
  tokens: ApiTokens;
  byIp: FailureLimiter;
  log: ReturnType<Services["log"]["child"]>;
}

/**
 * A request with `Authorization: Bearer`: the token decides, never a cookie beside it. Failures
 * count against the client address with failed sign-ins (the same limit). A read-only token may
 * only read.
 */
function createTokenAccess({ clock, users, tokens, byIp, log }: TokenAccessDeps): (req: Request) => Promise<SessionUser | Response | null> {
  return async function tokenAccess(req: Request): Promise<SessionUser | Response | null> {
    const token = bearerToken(req);
    if (token === null) return null;
    const now = clock.now().getTime();
    const ipKey = clientIpOf(req);
    const waitMs = byIp.retryAfterMs(ipKey, now);
    if (waitMs > 0) return refuse(429, "too many failed attempts from this address; try again later", { "retry-after": String(Math.ceil(waitMs / 1000)) });
    const identity = await tokens.verify(token);
    // A real token past its expiry is not a guess: it says so, and does not count against the address.
    if (identity && "expired" in identity) {
      return refuse(401, `the API token “${identity.expired.name}” expired at ${identity.expired.at}; make a new one in Settings → API tokens`);
    }
    const admin = identity ? await users.first() : null;
    if (!identity || !admin) {
      byIp.fail(ipKey, now);
      log.warn("refused an API token", { ip: ipKey });
      return refuse(401, "that API token is not valid: it was revoked, mistyped, or made by another install");
    }
    if (identity.readOnly && req.method !== "GET" && req.method !== "HEAD") return refuse(403, `the token “${identity.name}” is read-only; a ${req.method} needs a token that may write`);
    return { userId: admin.id, email: admin.email, token: { id: identity.tokenId, name: identity.name } };
  };
}
