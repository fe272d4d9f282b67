import type { App } from "../app";
import { asObject, json, notFound, readJson, type Route } from "../api/http";
import type { ApiAuth } from "../api/router";
import { UserError } from "../core/errors";
import { newId } from "../core/ids";
import { clientIpOf } from "./client-ip";
import { createOriginPolicy, sessionRouteRefusal, type OriginPolicy } from "./origin";
import { hashPassword, hashPasswordSync, verifyPassword } from "./password";
import { EMAIL_MAX_LENGTH, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./policy";
import { FailureLimiter } from "./rate-limit";
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
}

export interface Auth extends ApiAuth {
  /** The signed-in user for a `Cookie` request header, or null. */
  sessionFromCookieHeader(cookie: string | null | undefined): Promise<SessionUser | null>;
  /** The Host and Origin this app answers to (PUBLIC_URL's); the page gate checks pages with it. */
  origin: OriginPolicy;
  /** First start: create the admin from ADMIN_EMAIL and ADMIN_PASSWORD when both are set and no user exists. */
  ensureAdminFromEnv(): Promise<void>;
  hasUser(): Promise<boolean>;
}

export interface AuthOptions {
  /** Failed logins allowed per email and per client address in `windowMs` before 429. */
  loginFailures?: { max: number; windowMs: number };
}

export const LOGIN_FAILURES_DEFAULT = { max: 10, windowMs: 15 * 60 * 1000 };

type Services = Pick<App, "store" | "config" | "clock" | "log">;

/**
 * Single-admin authentication: first-run setup, login with argon2id, a signed session cookie that
 * logout revokes, the API's session and same-origin check, and the admin from the environment.
 */
export function createAuth(app: Services, opts: AuthOptions = {}): Auth {
  const log = app.log.child("auth");
  const users = app.store.users;
  const cookieOpts = sessionCookieOptions(app.config.publicUrl);
  const origin = createOriginPolicy(app.config.publicUrl, app.config.devHosts);
  const limits = opts.loginFailures ?? LOGIN_FAILURES_DEFAULT;
  const byEmail = new FailureLimiter(limits);
  const byIp = new FailureLimiter(limits);
  // Users are never deleted: once one exists, the answer stays yes without asking the database.
  let userExists = false;
  // A login for an unknown email verifies against this, so a miss costs what a wrong password
  // costs and the response time does not tell which emails exist. Made up front so the first miss
  // does not pay for it.
  const decoyHash = hashPassword(`decoy-${newId()}`);

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

  /**
   * Public routes still refuse cross-site posts and foreign Hosts: a forged login or setup would
   * sign the victim in as the attacker, and a rebound name (DNS rebinding) could create the admin.
   */
  const sameOrigin =
    (handler: Route["handler"]): Route["handler"] =>
    (req, params, url) =>
      sessionRouteRefusal(req, origin) ?? handler(req, params, url);

  const routes: Route[] = [
    {
      method: "POST",
      pattern: "/api/setup",
      public: true,
      handler: sameOrigin(async (req) => {
        // The setup page stops existing once the admin does.
        if (await hasUser()) return notFound();
        const { email, password } = credentials(await readJson(req), "setup", true);
        const passwordHash = await hashPassword(password);
        const now = app.clock.now().toISOString();
        const id = newId();
        if (!(await users.insertIfNone({ id, email, passwordHash, now }))) return notFound();
        userExists = true;
        log.info("admin created through the setup page", { email });
        return json({ email }, 201, { "set-cookie": setCookieFor(id, 1) });
      }),
    },
    {
      method: "POST",
      pattern: "/api/login",
      public: true,
      handler: sameOrigin(async (req) => {
        const { email, password } = credentials(await readJson(req), "login", false);
        const now = app.clock.now().getTime();
        const emailKey = email;
        const ipKey = clientIpOf(req);
        const waitMs = Math.max(byEmail.retryAfterMs(emailKey, now), byIp.retryAfterMs(ipKey, now));
        if (waitMs > 0) {
          const seconds = Math.ceil(waitMs / 1000);
          return json({ error: `too many failed sign-ins; try again in ${Math.ceil(seconds / 60)} minute(s)` }, 429, { "retry-after": String(seconds) });
        }
        const user = await users.byEmail(email);
        let ok = false;
        if (user) ok = await verifyPassword(user.passwordHash, password);
        else await verifyPassword(await decoyHash, password);
        if (!user || !ok) {
          byEmail.fail(emailKey, now);
          byIp.fail(ipKey, now);
          log.warn("failed sign-in", { email, ip: ipKey });
          return json({ error: "wrong email or password" }, 401);
        }
        byEmail.reset(emailKey);
        byIp.reset(ipKey);
        return json({ email: user.email }, 200, { "set-cookie": setCookieFor(user.id, user.sessionVersion) });
      }),
    },
    {
      method: "POST",
      pattern: "/api/logout",
      public: true,
      handler: sameOrigin(async (req) => {
        const session = await sessionFromCookieHeader(req.headers.get("cookie"));
        // Bumping the version signs out every browser, not just this one: the cookie that was just
        // cleared here may have been copied elsewhere.
        if (session) await users.bumpSessionVersion(session.userId, app.clock.now().toISOString());
        return json({ signed_out: true }, 200, { "set-cookie": clearSessionCookie(cookieOpts) });
      }),
    },
    {
      method: "GET",
      pattern: "/api/session",
      // Not public: check() has already answered 401 when there is no session.
      handler: async (req) => {
        const session = await sessionFromCookieHeader(req.headers.get("cookie"));
        return session ? json({ email: session.email }) : json({ error: "sign in required" }, 401);
      },
    },
  ];

  return {
    routes,
    origin,
    hasUser,
    sessionFromCookieHeader,
    async check(req) {
      const refused = sessionRouteRefusal(req, origin);
      if (refused) return refused;
      return (await sessionFromCookieHeader(req.headers.get("cookie"))) ? null : json({ error: "sign in required" }, 401);
    },
    async ensureAdminFromEnv() {
      const { adminEmail, adminPassword } = app.config;
      if (!adminEmail && !adminPassword) return;
      if (!adminEmail || !adminPassword) {
        log.warn("ADMIN_EMAIL and ADMIN_PASSWORD must both be set to create the admin; the setup page will ask instead");
        return;
      }
      if (await hasUser()) return;
      const problems = credentialProblems(adminEmail, adminPassword, true);
      if (problems.length) {
        // Starting anyway would show a setup page the operator did not expect; say what to fix.
        throw new Error(`auth: cannot create the admin from the environment: ${problems.map((p) => `${p.path === "email" ? "ADMIN_EMAIL" : "ADMIN_PASSWORD"} ${p.message}`).join("; ")}`);
      }
      const email = normaliseEmail(adminEmail);
      const now = app.clock.now().toISOString();
      if (await users.insertIfNone({ id: newId(), email, passwordHash: hashPasswordSync(adminPassword), now })) {
        log.info("admin created from ADMIN_EMAIL", { email });
      }
      userExists = true;
    },
  };
}

const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/** Every problem at once, each with its field. Setup also enforces the password policy; login only its presence. */
function credentialProblems(email: unknown, password: unknown, setup: boolean): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  if (typeof email !== "string" || !email.trim()) problems.push({ path: "email", message: "email is required" });
  else if (email.trim().length > EMAIL_MAX_LENGTH || !/^[^\s@]+@[^\s@]+$/.test(email.trim())) {
    problems.push({ path: "email", message: "enter an email address like you@example.com" });
  }
  if (typeof password !== "string" || !password) problems.push({ path: "password", message: "password is required" });
  else if (password.length > PASSWORD_MAX_LENGTH) problems.push({ path: "password", message: `password must be at most ${PASSWORD_MAX_LENGTH} characters` });
  else if (setup && password.length < PASSWORD_MIN_LENGTH) problems.push({ path: "password", message: `password must be at least ${PASSWORD_MIN_LENGTH} characters` });
  return problems;
}

function credentials(body: unknown, what: "setup" | "login", setup: boolean): { email: string; password: string } {
  const o = asObject(body, what);
  const problems = credentialProblems(o.email, o.password, setup);
  if (problems.length) throw new UserError(`${what}: ${problems.map((p) => p.message).join("; ")}`, problems);
  return { email: normaliseEmail(o.email as string), password: o.password as string };
}
