import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createApi, type Api } from "@/lib/api";
import { createAppletService } from "@/lib/applets/service";
import { bootAuth, shutAuth, type BootedAuth } from "../helpers/auth";
import { testSql } from "../helpers/engines";
import { CLIENT_IP_HEADER, stampClientIp } from "@/lib/auth/client-ip";
import { safeNext } from "@/lib/auth/safe-next";
import { SESSION_TTL_SECONDS, signSession } from "@/lib/auth/session";

const EMAIL = "owner@example.com";
const PASSWORD = "correct horse battery staple";
const ORIGIN = "http://localhost:3000";

type Booted = BootedAuth;
const boot = (env: Record<string, string> = {}) => bootAuth(env);
const shut = shutAuth;

interface CallOptions {
  cookie?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

function call(api: Api, method: string, p: string, opts: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.cookie) headers.cookie = opts.cookie;
  let body: string | undefined;
  if (method !== "GET" && method !== "HEAD") {
    headers["content-type"] = "application/json";
    body = JSON.stringify(opts.body ?? {});
  }
  return api.handle(new Request(`http://localhost:3000${p}`, { method, headers, body }));
}

const sessionCookie = (res: Response): string => (res.headers.get("set-cookie") ?? "").split(";")[0]!;

async function login(b: Booted, headers: Record<string, string> = {}, password = PASSWORD): Promise<Response> {
  return call(b.api, "POST", "/api/login", { body: { email: EMAIL, password }, headers });
}

async function signedIn(b: Booted): Promise<string> {
  const res = await login(b);
  expect(res.status).toBe(200);
  return sessionCookie(res);
}

/** Every session-protected route of lib/api/routes/* (method, pattern as declared there, a concrete path). */
const ROUTER_ROUTES: [method: string, pattern: string, path: string][] = [
  ["GET", "/api/meta", "/api/meta"],
  ["GET", "/api/applets", "/api/applets"],
  ["POST", "/api/applets", "/api/applets"],
  ["POST", "/api/applets/from-example", "/api/applets/from-example"],
  ["POST", "/api/applets/preview", "/api/applets/preview"],
  ["POST", "/api/applets/timing-preview", "/api/applets/timing-preview"],
  ["POST", "/api/applets/filter-test", "/api/applets/filter-test"],
  ["POST", "/api/triggers/fetch", "/api/triggers/fetch"],
  ["GET", "/api/applets/:id", "/api/applets/a1"],
  ["PUT", "/api/applets/:id", "/api/applets/a1"],
  ["DELETE", "/api/applets/:id", "/api/applets/a1"],
  ["POST", "/api/applets/:id/enable", "/api/applets/a1/enable"],
  ["POST", "/api/applets/:id/disable", "/api/applets/a1/disable"],
  ["POST", "/api/applets/:id/test", "/api/applets/a1/test"],
  ["GET", "/api/applets/:id/planned", "/api/applets/a1/planned"],
  ["GET", "/api/applets/:id/events", "/api/applets/a1/events"],
  ["GET", "/api/applets/:id/ledger", "/api/applets/a1/ledger"],
  ["GET", "/api/applets/:id/activity", "/api/applets/a1/activity"],
  ["PUT", "/api/applets/:id/activity", "/api/applets/a1/activity"],
  ["GET", "/api/applets/:id/controls", "/api/applets/a1/controls"],
  ["PUT", "/api/applets/:id/controls", "/api/applets/a1/controls"],
  ["POST", "/api/applets/:id/duplicate", "/api/applets/a1/duplicate"],
  ["POST", "/api/applets/:id/listen", "/api/applets/a1/listen"],
  ["POST", "/api/applets/:id/dry-run", "/api/applets/a1/dry-run"],
  ["DELETE", "/api/applets/:id/listen", "/api/applets/a1/listen"],
  ["GET", "/api/applets/:id/versions", "/api/applets/a1/versions"],
  ["GET", "/api/applets/:id/versions/:n", "/api/applets/a1/versions/1"],
  ["POST", "/api/applets/:id/versions/:n/restore", "/api/applets/a1/versions/1/restore"],
  ["POST", "/api/applets/:id/versions/:n/purge-credentials", "/api/applets/a1/versions/1/purge-credentials"],
  ["GET", "/api/runs", "/api/runs?status=failed"],
  ["GET", "/api/runs/:id", "/api/runs/r1"],
  ["POST", "/api/runs/:id/retry", "/api/runs/r1/retry"],
  ["POST", "/api/runs/:id/replay", "/api/runs/r1/replay"],
  ["POST", "/api/runs/bulk-retry", "/api/runs/bulk-retry"],
  ["POST", "/api/runs/:id/retry-from", "/api/runs/r1/retry-from"],
  ["POST", "/api/runs/retry-matching", "/api/runs/retry-matching"],
  ["GET", "/api/waits", "/api/waits"],
  ["POST", "/api/runs/:id/resume", "/api/runs/r1/resume"],
  ["POST", "/api/runs/:id/cancel", "/api/runs/r1/cancel"],
  ["GET", "/api/stream", "/api/stream"],
  ["POST", "/api/settings/sheets-test", "/api/settings/sheets-test"],
  ["POST", "/api/account/password", "/api/account/password"],
  ["GET", "/api/settings/alerts", "/api/settings/alerts"],
  ["PUT", "/api/settings/alerts", "/api/settings/alerts"],
  ["POST", "/api/settings/alerts/test", "/api/settings/alerts/test"],
  ["PUT", "/api/applets/:id/alerts", "/api/applets/a1/alerts"],
  ["GET", "/api/tokens", "/api/tokens"],
  ["POST", "/api/tokens", "/api/tokens"],
  ["DELETE", "/api/tokens/:id", "/api/tokens/t1"],
  ["GET", "/api/secrets", "/api/secrets"],
  ["POST", "/api/secrets", "/api/secrets"],
  ["DELETE", "/api/secrets/:name", "/api/secrets/SLACK"],
  ["GET", "/api/export", "/api/export"],
  ["POST", "/api/import", "/api/import?overwrite=true"],
];

/** The pages of the spec's Screens section and a few more; the gate covers every path, these sample it. */
const PAGE_PATHS = ["/", "/applets", "/applets/new", "/applets/3f0c2a9e-1111-4222-8333-444455556666", "/runs", "/runs/abc?status=failed", "/settings", "/anything/else"];

let b: Booted;

beforeAll(async () => {
  b = await boot();
  const res = await call(b.api, "POST", "/api/setup", { body: { email: EMAIL, password: PASSWORD } });
  expect(res.status).toBe(201);
});

afterAll(async () => {
  await shut(b);
});

describe("sessions guard the API and the pages", () => {
  it("the route list above covers every route of the API's route table", () => {
    const routes = b.api.routes().filter((r) => r.path !== "/api/session" && !r.public);
    // Guard the guard: a table that lists nothing would pass vacuously.
    expect(routes.length).toBeGreaterThanOrEqual(18);
    const listed = new Set(ROUTER_ROUTES.map(([, pattern]) => pattern));
    expect(routes.map((r) => r.path).filter((p) => !listed.has(p))).toEqual([]);
    const listedPairs = new Set(ROUTER_ROUTES.map(([method, pattern]) => `${method} ${pattern}`));
    expect(routes.map((r) => `${r.method} ${r.path}`).filter((p) => !listedPairs.has(p))).toEqual([]);
  });

  it("every non-public API route answers 401 without the session cookie", async () => {
    const authRoutes = b.api
      .routes()
      .filter((r) => !r.public && !ROUTER_ROUTES.some(([m, p]) => m === r.method && p === r.path))
      .map((r): [string, string, string] => [r.method, r.path, r.path]);
    expect(authRoutes.map(([m, p]) => `${m} ${p}`)).toEqual(["GET /api/session"]);
    for (const [method, , p] of [...ROUTER_ROUTES, ...authRoutes]) {
      const res = await call(b.api, method, p, { body: { name: "x", value: "y" } });
      expect(res.status, `${method} ${p}`).toBe(401);
      expect(await res.json(), `${method} ${p}`).toEqual({ error: "sign in required" });
    }
    // Nothing got through: no applet, no secret was written by the unauthenticated calls.
    expect(await b.app.store.applets.list()).toEqual([]);
    expect(await b.app.secrets.list()).toEqual([]);
  });

  it("with the cookie the same routes are served", async () => {
    const cookie = await signedIn(b);
    expect((await call(b.api, "GET", "/api/applets", { cookie })).status).toBe(200);
    expect((await call(b.api, "GET", "/api/meta", { cookie })).status).toBe(200);
    expect((await call(b.api, "GET", "/api/runs/r1", { cookie })).status).toBe(404);
    const session = await call(b.api, "GET", "/api/session", { cookie });
    expect(session.status).toBe(200);
    expect(await session.json()).toEqual({ email: EMAIL });
  });

  it("every page path redirects to /login without the cookie, and is served with it", async () => {
    const cookie = await signedIn(b);
    for (const p of PAGE_PATHS) {
      const res = await fetch(b.base + p, { redirect: "manual" });
      expect(res.status, p).toBe(302);
      expect(res.headers.get("location"), p).toBe(`/login?next=${encodeURIComponent(p)}`);
      expect(res.headers.get("cache-control")).toBe("no-store");
      const ok = await fetch(b.base + p, { redirect: "manual", headers: { cookie } });
      expect(ok.status, p).toBe(200);
    }
    expect((await fetch(`${b.base}/login`, { redirect: "manual" })).status).toBe(200);
    // Signed in, /login goes on to `next`, but only to a path on this site.
    const back = await fetch(`${b.base}/login?next=${encodeURIComponent("/runs?status=failed")}`, { redirect: "manual", headers: { cookie } });
    expect(back.headers.get("location")).toBe("/runs?status=failed");
    const offsite = await fetch(`${b.base}/login?next=${encodeURIComponent("//evil.example/x")}`, { redirect: "manual", headers: { cookie } });
    expect(offsite.headers.get("location")).toBe("/");
    // Next's assets, static files and the API (which answers 401 itself) are not pages.
    for (const p of ["/_next/static/chunks/main.js", "/favicon.ico", "/robots.txt", "/api/applets"]) {
      expect((await fetch(b.base + p, { redirect: "manual" })).status, p).toBe(200);
    }
  });

  it("safeNext keeps only paths on this site", () => {
    expect(safeNext("/applets/new?x=1")).toBe("/applets/new?x=1");
    for (const bad of [null, undefined, "", "https://evil.example", "//evil.example", "/\\evil.example", "/\t/evil.example", "/\n/evil.example", "javascript:alert(1)", "evil"]) {
      expect(safeNext(bad), String(bad)).toBe("/");
    }
  });
});

describe("the session cookie", () => {
  it("a cookie with any one character changed is refused", async () => {
    const cookie = await signedIn(b);
    const value = cookie.slice("whenthen_session=".length);
    expect((await call(b.api, "GET", "/api/applets", { cookie })).status).toBe(200);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (let i = 0; i < value.length; i++) {
      // The smallest change at every position: the lowest bit of the base64url digit. At the last
      // signature character that bit is padding a byte-wise decode ignores, so this also catches a
      // comparison of decoded bytes instead of the text.
      const replacement = value[i] === "." ? "A" : alphabet[alphabet.indexOf(value[i]!) ^ 1]!;
      const changed = value.slice(0, i) + replacement + value.slice(i + 1);
      const res = await call(b.api, "GET", "/api/applets", { cookie: `whenthen_session=${changed}` });
      expect(res.status, `changed at ${i}`).toBe(401);
    }
  });

  it("a truncated cookie is refused", async () => {
    const cookie = await signedIn(b);
    const value = cookie.slice("whenthen_session=".length);
    const dot = value.indexOf(".");
    for (const n of [value.length - 1, value.length - 20, dot + 1, dot, dot - 1, 10, 0]) {
      const res = await call(b.api, "GET", "/api/applets", { cookie: `whenthen_session=${value.slice(0, n)}` });
      expect(res.status, `first ${n} characters`).toBe(401);
    }
  });

  it("a cookie signed with another secret is refused; the same payload signed with ours is accepted", async () => {
    const user = (await b.app.store.users.byEmail(EMAIL))!;
    const payload = { uid: user.id, v: user.sessionVersion, exp: Math.floor(b.clock.now().getTime() / 1000) + 3600 };
    const forged = signSession(payload, "not-the-session-secret");
    expect((await call(b.api, "GET", "/api/applets", { cookie: `whenthen_session=${forged}` })).status).toBe(401);
    const genuine = signSession(payload, b.app.config.sessionSecret);
    expect((await call(b.api, "GET", "/api/applets", { cookie: `whenthen_session=${genuine}` })).status).toBe(200);
    // A cookie for a user id that does not exist, even correctly signed, is refused.
    const ghost = signSession({ ...payload, uid: "no-such-user" }, b.app.config.sessionSecret);
    expect((await call(b.api, "GET", "/api/applets", { cookie: `whenthen_session=${ghost}` })).status).toBe(401);
  });

  it("a cookie from before logout is refused, in every browser that had one", async () => {
    const first = await signedIn(b);
    const second = await signedIn(b);
    expect((await call(b.api, "GET", "/api/applets", { cookie: second })).status).toBe(200);

    const out = await call(b.api, "POST", "/api/logout", { cookie: first });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(/^whenthen_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Lax/);

    for (const cookie of [first, second]) {
      expect((await call(b.api, "GET", "/api/applets", { cookie })).status).toBe(401);
      expect((await fetch(`${b.base}/applets`, { redirect: "manual", headers: { cookie } })).status).toBe(302);
    }
    const fresh = await signedIn(b);
    expect((await call(b.api, "GET", "/api/applets", { cookie: fresh })).status).toBe(200);
  });

  it("an event stream opened before a logout ends at its next session check", async () => {
    const cookie = await signedIn(b);
    const api = createApi({ app: b.app, applets: createAppletService(b.app), auth: b.auth, streamPingMs: 20 });
    const res = await call(api, "GET", "/api/stream", { cookie });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain(": connected");
    await call(b.api, "POST", "/api/logout", { cookie });
    // Pings until the check notices, then the stream closes.
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      expect(new TextDecoder().decode(chunk.value)).toMatch(/^: ping/);
    }
  });

  it("a cookie is good for 30 days and refused after", async () => {
    const cookie = await signedIn(b);
    const start = b.clock.now().getTime();
    try {
      b.clock.set(start + SESSION_TTL_SECONDS * 1000 - 60_000);
      expect((await call(b.api, "GET", "/api/applets", { cookie })).status).toBe(200);
      b.clock.set(start + SESSION_TTL_SECONDS * 1000 + 1000);
      expect((await call(b.api, "GET", "/api/applets", { cookie })).status).toBe(401);
    } finally {
      b.clock.set(start);
    }
  });

  it("a correct login sets an HttpOnly, SameSite=Lax, 30-day cookie, Secure only when PUBLIC_URL is https", async () => {
    const res = await login(b);
    const header = res.headers.get("set-cookie")!;
    const attrs = header.split(";").map((s) => s.trim());
    expect(attrs[0]).toMatch(/^whenthen_session=.+\..+$/);
    expect(attrs).toContain("HttpOnly");
    expect(attrs).toContain("SameSite=Lax");
    expect(attrs).toContain("Path=/");
    expect(attrs).toContain(`Max-Age=${30 * 24 * 60 * 60}`);
    expect(attrs).not.toContain("Secure");

    const https = await boot({ PUBLIC_URL: "https://whenthen.example.com" });
    try {
      // Addressed to PUBLIC_URL's host, as a browser (or Caddy in front) sends it.
      const host = { host: "whenthen.example.com" };
      expect((await call(https.api, "POST", "/api/setup", { headers: host, body: { email: EMAIL, password: PASSWORD } })).headers.get("set-cookie")).toMatch(/; Secure$/);
      const secure = await login(https, host);
      expect(secure.status).toBe(200);
      const secureAttrs = secure.headers.get("set-cookie")!.split(";").map((s) => s.trim());
      expect(secureAttrs).toContain("Secure");
      expect(secureAttrs).toContain("HttpOnly");
      expect(secureAttrs).toContain("SameSite=Lax");
      expect((await call(https.api, "POST", "/api/logout", { headers: host, cookie: sessionCookie(secure) })).headers.get("set-cookie")).toMatch(/; Secure$/);
    } finally {
      await shut(https);
    }
  });

  it("a wrong password and an unknown email get the same generic 401 and no cookie", async () => {
    const wrong = await login(b, { [CLIENT_IP_HEADER]: "198.51.100.1" }, "not the password");
    const unknown = await call(b.api, "POST", "/api/login", { body: { email: "nobody@example.com", password: PASSWORD }, headers: { [CLIENT_IP_HEADER]: "198.51.100.1" } });
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(await res.json()).toEqual({ error: "wrong email or password" });
    }
    // Clears the email's failure count so later tests start from zero.
    expect((await login(b, { [CLIENT_IP_HEADER]: "198.51.100.1" })).status).toBe(200);
  });
});

describe("cross-origin requests", () => {
  it("a cross-origin POST to /api/* is refused with 403, even with a valid session", async () => {
    const cookie = await signedIn(b);
    const evilOrigin = await call(b.api, "POST", "/api/secrets", { cookie, headers: { origin: "https://evil.example" }, body: { name: "EVIL", value: "x" } });
    expect(evilOrigin.status).toBe(403);
    const crossSite = await call(b.api, "POST", "/api/secrets", { cookie, headers: { "sec-fetch-site": "cross-site" }, body: { name: "EVIL", value: "x" } });
    expect(crossSite.status).toBe(403);
    const sameSite = await call(b.api, "POST", "/api/applets", { cookie, headers: { "sec-fetch-site": "same-site", origin: "https://other.localhost:3000" }, body: {} });
    expect(sameSite.status).toBe(403);
    for (const method of ["PUT", "DELETE"]) {
      expect((await call(b.api, method, "/api/applets/a1", { cookie, headers: { origin: "https://evil.example" } })).status, method).toBe(403);
    }
    expect((await call(b.api, "POST", "/api/secrets", { cookie, headers: { origin: "null" }, body: { name: "EVIL", value: "x" } })).status).toBe(403);
    expect(await b.app.secrets.list()).toEqual([]);

    // Same origin (PUBLIC_URL's, or a loopback one since PUBLIC_URL is loopback) and non-browser clients go through.
    const same = await call(b.api, "POST", "/api/secrets", { cookie, headers: { origin: ORIGIN, "sec-fetch-site": "same-origin" }, body: { name: "SAME", value: "x" } });
    expect(same.status).toBe(201);
    const loopback = await call(b.api, "POST", "/api/secrets", { cookie, headers: { origin: "http://127.0.0.1:3000", host: "127.0.0.1:3000" }, body: { name: "LOOPBACK", value: "x" } });
    expect(loopback.status).toBe(201);
    // Changed this: the request's own Host (a LAN address) is no longer trusted; PUBLIC_URL is.
    const lan = await call(b.api, "POST", "/api/secrets", { cookie, headers: { origin: "http://192.168.1.20:3000", host: "192.168.1.20:3000" }, body: { name: "LAN", value: "x" } });
    expect(lan.status).toBe(403);
    const script = await call(b.api, "POST", "/api/secrets", { cookie, body: { name: "SCRIPT", value: "x" } });
    expect(script.status).toBe(201);
    expect((await b.app.secrets.list()).map((s) => s.name)).toEqual(["LOOPBACK", "SAME", "SCRIPT"]);
    // Reads are not state-changing; the browser's CORS rules keep their answers from another site.
    expect((await call(b.api, "GET", "/api/applets", { cookie, headers: { "sec-fetch-site": "cross-site" } })).status).toBe(200);
  });

  it("setup, login and logout refuse cross-origin posts too", async () => {
    const cookie = await signedIn(b);
    // 403 rather than setup's 404: the origin check comes first.
    expect((await call(b.api, "POST", "/api/setup", { headers: { origin: "https://evil.example" }, body: { email: "x@example.com", password: "long enough password" } })).status).toBe(403);
    const forcedLogin = await call(b.api, "POST", "/api/login", { headers: { "sec-fetch-site": "cross-site" }, body: { email: EMAIL, password: PASSWORD } });
    expect(forcedLogin.status).toBe(403);
    expect(forcedLogin.headers.get("set-cookie")).toBeNull();
    const forcedLogout = await call(b.api, "POST", "/api/logout", { cookie, headers: { origin: "https://evil.example" } });
    expect(forcedLogout.status).toBe(403);
    expect((await call(b.api, "GET", "/api/applets", { cookie })).status).toBe(200);
  });
});

describe("login rate limiting", () => {
  it("10 failures for one email within 15 minutes give 429 with Retry-After, even from other addresses and with the right password", async () => {
    for (let i = 0; i < 10; i++) {
      expect((await login(b, { [CLIENT_IP_HEADER]: `192.0.2.${i + 1}` }, `wrong-${i}`)).status).toBe(401);
    }
    const limited = await login(b, { [CLIENT_IP_HEADER]: "192.0.2.200" });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("set-cookie")).toBeNull();
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);

    b.clock.advance(retryAfter * 1000);
    expect((await login(b, { [CLIENT_IP_HEADER]: "192.0.2.200" })).status).toBe(200);
  });

  it("10 failures from one address give 429 for any email from it, not for other addresses", async () => {
    const ip = { [CLIENT_IP_HEADER]: "203.0.113.7" };
    for (let i = 0; i < 10; i++) {
      const res = await call(b.api, "POST", "/api/login", { headers: ip, body: { email: `guess${i}@example.com`, password: "guessing password" } });
      expect(res.status).toBe(401);
    }
    const limited = await call(b.api, "POST", "/api/login", { headers: ip, body: { email: "guess99@example.com", password: "guessing password" } });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBe(15 * 60);
    expect((await login(b, ip)).status).toBe(429);
    expect((await login(b, { [CLIENT_IP_HEADER]: "203.0.113.8" })).status).toBe(200);
    b.clock.advance(15 * 60 * 1000);
    expect((await login(b, ip)).status).toBe(200);
  });

  it("server.ts's client address header cannot be supplied by the client", async () => {
    const server = createServer((req, res) => {
      stampClientIp(req);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ header: req.headers[CLIENT_IP_HEADER], raw: req.rawHeaders }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { headers: { [CLIENT_IP_HEADER]: "1.2.3.4" } });
      const body = (await res.json()) as { header: string; raw: string[] };
      expect(body.header).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
      expect(body.raw).not.toContain("1.2.3.4");
      expect(body.raw.filter((h) => h.toLowerCase() === CLIENT_IP_HEADER)).toHaveLength(1);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe("API tokens", () => {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  async function makeToken(body: Record<string, unknown>): Promise<{ id: string; token: string; prefix: string }> {
    const cookie = await signedIn(b);
    const res = await call(b.api, "POST", "/api/tokens", { cookie, body });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; token: string; prefix: string };
  }

  it("a token is shown once, kept only as a hash, listed by name and prefix with its last use", async () => {
    const made = await makeToken({ name: "backup script" });
    expect(made.token).toMatch(/^wt_[A-Za-z0-9_-]{43}$/);
    expect(made.prefix).toBe(made.token.slice(0, 9));
    // The rows at rest are the subject: no column may hold the token itself.
    const rows = await testSql(b.app.store).all<Record<string, unknown>>("SELECT * FROM api_tokens");
    expect(JSON.stringify(rows)).not.toContain(made.token);
    const cookie = await signedIn(b);
    const before = (await (await call(b.api, "GET", "/api/tokens", { cookie })).json()) as { tokens: Record<string, unknown>[] };
    const listed = before.tokens.find((t) => t.id === made.id)!;
    expect(listed).toMatchObject({ name: "backup script", prefix: made.prefix, read_only: false, last_used_at: null });
    expect(JSON.stringify(before)).not.toContain(made.token);
    expect((await call(b.api, "GET", "/api/applets", { headers: bearer(made.token) })).status).toBe(200);
    const after = (await (await call(b.api, "GET", "/api/tokens", { cookie })).json()) as { tokens: Record<string, unknown>[] };
    expect(after.tokens.find((t) => t.id === made.id)!.last_used_at).toEqual(expect.any(String));
    // The name is asked for, and is unique.
    const dup = await call(b.api, "POST", "/api/tokens", { cookie, body: { name: "backup script" } });
    expect(dup.status).toBe(400);
    expect(JSON.stringify(await dup.json())).toContain("name");
  });

  it("every route a session can use takes a token; read-only tokens only read; a bad or revoked token gets 401 everywhere", async () => {
    const rw = await makeToken({ name: "cli" });
    const ro = await makeToken({ name: "dashboard", read_only: true });
    let n = 0;
    for (const [method, , p] of ROUTER_ROUTES) {
      n++;
      if (p === "/api/stream") continue; // an open stream; checked below with a GET that ends
      const withToken = await call(b.api, method, p, { headers: bearer(rw.token), body: { name: "X_TOKEN_TEST", value: "v" } });
      // Tokens and the password are managed with a session, never with a token.
      const tokenRoute = p.startsWith("/api/tokens") || p.startsWith("/api/account/");
      expect(withToken.status, `${method} ${p}`).not.toBe(401);
      if (tokenRoute) expect(withToken.status, `${method} ${p}: tokens are managed with a session`).toBe(403);
      else expect(withToken.status, `${method} ${p}`).not.toBe(403);
      const readOnly = await call(b.api, method, p, { headers: bearer(ro.token), body: { name: "X_TOKEN_TEST2", value: "v" } });
      if (method === "GET" && !tokenRoute) expect(readOnly.status, `read-only ${method} ${p}`).not.toBe(403);
      else expect(readOnly.status, `read-only ${method} ${p}`).toBe(403);
      // Each from its own address: failed tokens count with failed sign-ins (checked below).
      const bad = await call(b.api, method, p, { headers: { ...bearer(`wt_${"A".repeat(43)}`), [CLIENT_IP_HEADER]: `203.0.113.${n}` } });
      expect(bad.status, `bad token ${method} ${p}`).toBe(401);
    }
    const names = (await b.app.secrets.list()).map((s) => s.name);
    expect(names).toContain("X_TOKEN_TEST");
    expect(names).not.toContain("X_TOKEN_TEST2");
    const cookie = await signedIn(b);
    expect((await call(b.api, "DELETE", `/api/tokens/${rw.id}`, { cookie })).status).toBe(200);
    const revoked = await call(b.api, "GET", "/api/applets", { headers: bearer(rw.token) });
    expect(revoked.status).toBe(401);
    expect(((await revoked.json()) as { error: string }).error).toMatch(/revoked/);
  });

  it("a save with an API token is recorded as that token's in the applet's history; with the session, as the user's", async () => {
    const made = await makeToken({ name: "deploy script" });
    const definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/in" } }] };
    const created = await call(b.api, "POST", "/api/applets", { headers: bearer(made.token), body: { name: "By token", definition } });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { applet: { id: string } }).applet.id;
    const cookie = await signedIn(b);
    expect((await call(b.api, "PUT", `/api/applets/${id}`, { cookie, body: { name: "By session" } })).status).toBe(200);
    const listed = (await (await call(b.api, "GET", `/api/applets/${id}/versions`, { headers: bearer(made.token) })).json()) as { versions: { version: number; author: Record<string, unknown> }[] };
    expect(listed.versions.map((v) => [v.version, v.author])).toEqual([
      [2, { kind: "user", id: expect.any(String), label: EMAIL, text: EMAIL }],
      [1, { kind: "token", id: made.id, label: "deploy script", text: "API token “deploy script”" }],
    ]);
    expect((await call(b.api, "DELETE", `/api/applets/${id}`, { cookie })).status).toBe(200);
  });

  it("failed tokens are rate limited per address like failed sign-ins", async () => {
    const good = await makeToken({ name: "limited" });
    const from = { [CLIENT_IP_HEADER]: "198.51.100.77" };
    for (let i = 0; i < 10; i++) expect((await call(b.api, "GET", "/api/applets", { headers: { ...bearer(`wt_${String(i).repeat(43).slice(0, 43)}`), ...from } })).status).toBe(401);
    const limited = await call(b.api, "GET", "/api/applets", { headers: { ...bearer(good.token), ...from } });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await call(b.api, "GET", "/api/applets", { headers: { ...bearer(good.token), [CLIENT_IP_HEADER]: "198.51.100.78" } })).status).toBe(200);
  });
});
