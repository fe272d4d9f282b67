import { createHmac } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createApi, type Api } from "@/lib/api";
import { createAuth } from "@/lib/auth";
import { createIngress } from "@/lib/http/ingress";
import { createWebServer } from "@/lib/http/server";
import { allEventsOf, createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine, type TestEngine } from "../helpers/engines";

/**
 * What an attacker from outside found on the surfaces added since the last round: the API's
 * session-only routes, the CSRF origin check, idempotency keys, credentials in applet views and
 * their history, API token expiry. The hostile tests that touch the store run on every engine.
 */

const CREDENTIALS = { email: "owner@example.com", password: "correct horse battery" };

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Booted {
  app: TestApp;
  api: Api;
  cookie: string;
}

/** A test app on `engine` with the real auth in front of the API, its admin set up and signed in. */
async function boot(engine?: TestEngine, env: Record<string, string> = {}): Promise<Booted> {
  const app = createTestApp({ engine, env });
  cleanups.push(() => app.cleanup());
  const api = createApi({ app, applets: app.applets, auth: createAuth(app) });
  const setup = await call(api, "POST", "/api/setup", { body: CREDENTIALS });
  expect(setup.status).toBe(201);
  return { app, api, cookie: (setup.headers.get("set-cookie") ?? "").split(";")[0]! };
}

interface CallOptions {
  cookie?: string;
  token?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

function call(api: Api, method: string, path: string, opts: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (method !== "GET" && method !== "HEAD") {
    headers["content-type"] ??= "application/json";
    body = JSON.stringify(opts.body ?? {});
  }
  return api.handle(new Request(`http://localhost:3000${path}`, { method, headers, body }));
}

async function makeToken(b: Booted, body: Record<string, unknown>): Promise<{ id: string; token: string }> {
  const res = await call(b.api, "POST", "/api/tokens", { cookie: b.cookie, body });
  expect(res.status, JSON.stringify(await res.clone().json())).toBe(201);
  return (await res.json()) as { id: string; token: string };
}

/** The lean ingress of `app` on a real node:http server; its base URL. */
async function ingressOf(app: TestApp): Promise<string> {
  const ingress = createIngress(app);
  const server = createWebServer((req, res) => void ingress(req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function webhookApplet(app: TestApp, config: Record<string, unknown>, enabled = true) {
  const a = await app.applets.create({ name: "hook", enabled, definition: { version: 1, trigger: { type: "webhook", config }, actions: [{ type: "note", config: { filename: "hook.md", content: "{{trigger.body.n}}" } }] } });
  return { id: a.id, path: `/api/hooks/${a.id}/${a.webhookToken}` };
}

forEachEngine((engine) => {
  describe("session-only routes are decided on the matched route, however the path is spelt", () => {
    it("a read-write API token is refused on every session-only route under percent-encodings of its path, and changes nothing", async () => {
      const b = await boot(engine);
      const mine = await makeToken(b, { name: "leaked script" });
      const other = await makeToken(b, { name: "the backup job" });
      const user = (await b.app.store.users.byEmail(CREDENTIALS.email))!;

      // Each spelling routes to a session-only route (Hono decodes it): 403 with the reason.
      const routed: [string, string][] = [
        ["GET", "/api/tokens"],
        ["GET", "/api/%74okens"],
        ["GET", "/api/t%6Fkens"],
        ["GET", "/api/t%6fkens"],
        ["GET", "/api/%74%6F%6B%65%6E%73"],
        ["GET", "/api/%74oken%73/"],
        ["POST", "/api/%74okens"],
        ["POST", "/api/tok%65ns"],
        ["DELETE", `/api/%74okens/${other.id}`],
        ["DELETE", `/api/tokens/${other.id}`],
        ["DELETE", `/api/t%6Fkens/${other.id}/`],
        ["POST", "/api/account/password"],
        ["POST", "/api/%61ccount/password"],
        ["POST", "/api/account/p%61ssword"],
        ["POST", "/api/%61%63%63%6f%75%6e%74/%70%61%73%73%77%6f%72%64"],
      ];
      for (const [method, path] of routed) {
        const res = await call(b.api, method, path, { token: mine.token, body: { name: "minted by a token", current_password: "guess", new_password: "a brand new password" } });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(((await res.json()) as { error: string }).error, `${method} ${path}`).toMatch(/while signed in, not with a token/);
      }
      // Spellings that do not decode to one (double encoding, an encoded slash, another case): no route at all.
      const unrouted: [string, string][] = [
        ["GET", "/api/%2574okens"],
        ["POST", "/api/%2574okens"],
        ["GET", "/api/%54okens"],
        ["GET", "/api/TOKENS"],
        ["POST", "/api/account%2Fpassword"],
        ["POST", "/api/account%2fpassword"],
        ["POST", "/api/%2561ccount/password"],
        ["DELETE", `/api/tokens%2F${other.id}`],
      ];
      for (const [method, path] of unrouted) {
        const res = await call(b.api, method, path, { token: mine.token, body: { name: "minted by a token", current_password: "guess", new_password: "a brand new password" } });
        expect([404, 405], `${method} ${path}: ${res.status}`).toContain(res.status);
      }

      // Nothing minted, nothing revoked, the password and the sessions as they were.
      const listed = (await (await call(b.api, "GET", "/api/tokens", { cookie: b.cookie })).json()) as { tokens: { name: string }[] };
      expect(listed.tokens.map((t) => t.name)).toEqual(["leaked script", "the backup job"]);
      expect((await call(b.api, "GET", "/api/applets", { token: other.token })).status).toBe(200);
      expect((await b.app.store.users.byId(user.id))?.sessionVersion).toBe(user.sessionVersion);
      expect((await call(b.api, "POST", "/api/login", { body: CREDENTIALS })).status).toBe(200);
      // The same spellings reach their route with the session: the refusal above was the token's.
      expect((await call(b.api, "GET", "/api/%74okens", { cookie: b.cookie })).status).toBe(200);
    });

    it("the route table says which routes are session-only: exactly the token routes and the password change", () => {
      const app = createTestApp({ engine });
      cleanups.push(() => app.cleanup());
      const api = createApi({ app, applets: app.applets, auth: createAuth(app) });
      const only = api.routes().filter((r) => r.sessionOnly).map((r) => `${r.method} ${r.path}`).sort();
      expect(only).toEqual(["DELETE /api/tokens/:id", "GET /api/tokens", "POST /api/account/password", "POST /api/tokens"]);
    });
  });
});

describe("CSRF: the Origin of a state-changing request is compared exactly", () => {
  it("with a loopback PUBLIC_URL, an Origin on another port, with a trailing dot or another scheme is refused with 403 and creates nothing", async () => {
    const b = await boot(undefined, { PUBLIC_URL: "http://localhost:3000" });
    const hostile: [origin: string, host: string][] = [
      ["http://127.0.0.1:1", "127.0.0.1:3000"],
      ["http://127.0.0.1:1", "localhost:3000"],
      ["http://localhost:1", "localhost:3000"],
      ["http://127.0.0.1.:3000", "127.0.0.1:3000"],
      ["http://127.0.0.1.:3000", "localhost:3000"],
      ["http://localhost.:3000", "localhost:3000"],
      ["https://localhost:3000", "localhost:3000"],
      ["http://localhost:3000.", "localhost:3000"],
      ["http://localhost", "localhost:3000"],
      ["null", "localhost:3000"],
    ];
    for (const [origin, host] of hostile) {
      const res = await call(b.api, "POST", "/api/secrets", { cookie: b.cookie, headers: { origin, host }, body: { name: "PLANTED", value: "x" } });
      expect(res.status, `Origin ${origin}, Host ${host}`).toBe(403);
      expect(((await res.json()) as { error: string }).error).toBe(`cross-origin request refused (Origin: ${origin})`);
    }
    expect(await b.app.secrets.list()).toEqual([]);
    // The app's own origins still pass: PUBLIC_URL's, and the loopback address the laptop opened.
    expect((await call(b.api, "POST", "/api/secrets", { cookie: b.cookie, headers: { origin: "http://localhost:3000", host: "localhost:3000" }, body: { name: "SAME", value: "x" } })).status).toBe(201);
    expect((await call(b.api, "POST", "/api/secrets", { cookie: b.cookie, headers: { origin: "http://127.0.0.1:3000", host: "127.0.0.1:3000" }, body: { name: "LOOPBACK", value: "x" } })).status).toBe(201);
    expect((await call(b.api, "POST", "/api/secrets", { cookie: b.cookie, headers: { origin: "http://127.0.0.1:8080", host: "127.0.0.1:8080" }, body: { name: "FORWARDED", value: "x" } })).status).toBe(201);
  });
});

forEachEngine((engine) => {
  describe("idempotency keys longer than 200 characters are hashed, not cut", () => {
    it("two keys that share their first 200 characters are two deliveries; each one repeated is its own duplicate; a short key is stored as sent", async () => {
      const app = createTestApp({ engine });
      cleanups.push(() => app.cleanup());
      const base = await ingressOf(app);
      const hook = await webhookApplet(app, { dedupe_header: "Idempotency-Key" });
      const send = async (key: string, n: number) => {
        const res = await fetch(`${base}${hook.path}`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify({ n }) });
        return { status: res.status, body: (await res.json()) as { run_id: string; event_id: string; duplicate?: boolean } };
      };
      const shared = "k".repeat(200);
      const first = await send(`${shared}-first`, 1);
      const second = await send(`${shared}-second`, 2);
      expect([first.status, second.status]).toEqual([202, 202]);
      expect(second.body.run_id).not.toBe(first.body.run_id);
      // Each, sent again, is answered with its own first delivery and stores nothing.
      const again = await send(`${shared}-second`, 3);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ duplicate: true, run_id: second.body.run_id, event_id: second.body.event_id });
      expect((await send(`${shared}-first`, 4)).body).toMatchObject({ duplicate: true, run_id: first.body.run_id });
      // What is stored: the start of the key, readable, and a hash of all of it.
      const stored = (await app.store.runs.event(first.body.event_id))!.dedupeKey!;
      expect(stored).toMatch(/^k{100}…sha256:[0-9a-f]{64}$/);
      expect(stored).not.toBe((await app.store.runs.event(second.body.event_id))!.dedupeKey);
      // A key of up to 200 characters is stored exactly as before, so keys stored by an older release still match.
      const short = await send("order-1042", 5);
      expect((await app.store.runs.event(short.body.event_id))!.dedupeKey).toBe("order-1042");
      const exactly200 = await send(shared, 6);
      expect((await app.store.runs.event(exactly200.body.event_id))!.dedupeKey).toBe(shared);
      expect((await send("order-1042", 7)).body).toMatchObject({ duplicate: true, run_id: short.body.run_id });
      expect(await allEventsOf(app.store)).toHaveLength(4);
    });

    it("a body path holding a long id (Stripe-style) is hashed the same way", async () => {
      const app = createTestApp({ engine });
      cleanups.push(() => app.cleanup());
      const base = await ingressOf(app);
      const hook = await webhookApplet(app, { dedupe_path: "data.id" });
      const post = (id: string) => fetch(`${base}${hook.path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ data: { id } }) });
      const prefix = "evt_".padEnd(300, "x");
      expect((await post(`${prefix}1`)).status).toBe(202);
      expect((await post(`${prefix}2`)).status).toBe(202);
      expect((await post(`${prefix}1`)).status).toBe(200);
      expect(await allEventsOf(app.store)).toHaveLength(2);
    });
  });

  describe("a disabled applet checks the signature before it says it is disabled", () => {
    it("a request with a bad or no signature to a disabled signed webhook gets the empty 401, and only a signed one hears 'disabled'", async () => {
      const app = createTestApp({ engine });
      cleanups.push(() => app.cleanup());
      await app.secrets.set("GH_SECRET", "it's a secret to everybody");
      const base = await ingressOf(app);
      const github = await webhookApplet(app, { verify: "github", hmac_secret: "{{secrets.GH_SECRET}}" }, false);
      const bearer = await webhookApplet(app, { verify: "bearer", hmac_secret: "{{secrets.GH_SECRET}}" }, false);
      const body = JSON.stringify({ n: 1 });
      const signature = `sha256=${createHmac("sha256", "it's a secret to everybody").update(body).digest("hex")}`;
      const post = (path: string, headers: Record<string, string>) => fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
      for (const [what, res] of [
        ["forged signature", await post(github.path, { "x-hub-signature-256": `sha256=${"0".repeat(64)}` })],
        ["no signature", await post(github.path, {})],
        ["wrong bearer token", await post(bearer.path, { authorization: "Bearer guess" })],
      ] as const) {
        expect(res.status, what).toBe(401);
        expect(await res.text(), what).toBe("");
      }
      const signed = await post(github.path, { "x-hub-signature-256": signature });
      expect(signed.status).toBe(200);
      expect(await signed.json()).toEqual({ queued: false, reason: "disabled" });
      expect(await (await post(bearer.path, { authorization: "Bearer it's a secret to everybody" })).json()).toEqual({ queued: false, reason: "disabled" });
      expect(await allEventsOf(app.store)).toHaveLength(0);
    });
  });
});

forEachEngine((engine) => {
  describe("API tokens with an optional expiry, listed with their last use", () => {
    it("a token made to expire works until then, is refused after with a 401 that says it expired (not counted as a guess), and is listed as expired", async () => {
      const b = await boot(engine);
      const now = b.app.clock.now().getTime();
      const inAnHour = new Date(now + 3_600_000).toISOString();
      const short = await makeToken(b, { name: "one hour", expires_at: inAnHour });
      const forever = await makeToken(b, { name: "forever" });
      expect((await call(b.api, "GET", "/api/applets", { token: short.token })).status).toBe(200);
      b.app.clock.advance(3_600_000);
      for (let i = 0; i < 12; i++) {
        const refused = await call(b.api, "GET", "/api/applets", { token: short.token });
        expect(refused.status).toBe(401);
        expect(((await refused.json()) as { error: string }).error).toBe(`the API token “one hour” expired at ${inAnHour}; make a new one in Settings → API tokens`);
      }
      // Twelve refusals of an expired token from one address are not twelve failed guesses: no 429.
      expect((await call(b.api, "GET", "/api/applets", { token: forever.token })).status).toBe(200);
      const listed = (await (await call(b.api, "GET", "/api/tokens", { cookie: b.cookie })).json()) as { tokens: { name: string; expires_at: string | null; expired: boolean }[] };
      expect(listed.tokens.map((t) => [t.name, t.expires_at, t.expired])).toEqual([
        ["one hour", inAnHour, true],
        ["forever", null, false],
      ]);
    });

    it("an expiry that is not a date, not a real day or not in the future is refused with its field, and no token is made", async () => {
      const b = await boot(engine);
      for (const expires_at of ["next week", "2027-02-31T00:00:00Z", "2027-01-01", b.app.clock.now().toISOString(), 1790000000]) {
        const res = await call(b.api, "POST", "/api/tokens", { cookie: b.cookie, body: { name: `t ${String(expires_at)}`, expires_at } });
        expect(res.status, String(expires_at)).toBe(400);
        expect(((await res.json()) as { problems: { path: string }[] }).problems.map((p) => p.path), String(expires_at)).toEqual(["expires_at"]);
      }
      expect(await b.app.store.apiTokens.list()).toEqual([]);
    });

    it("last use is written at most once a minute per token, however many requests it makes", async () => {
      const b = await boot(engine);
      const t = await makeToken(b, { name: "busy script" });
      const lastUsed = async () => (await b.app.store.apiTokens.list())[0]!.lastUsedAt;
      const first = b.app.clock.now().toISOString();
      expect((await call(b.api, "GET", "/api/applets", { token: t.token })).status).toBe(200);
      expect(await lastUsed()).toBe(first);
      for (let i = 0; i < 5; i++) {
        b.app.clock.advance(10_000);
        await call(b.api, "GET", "/api/applets", { token: t.token });
      }
      expect(await lastUsed()).toBe(first);
      b.app.clock.advance(10_000);
      await call(b.api, "GET", "/api/applets", { token: t.token });
      expect(await lastUsed()).toBe(b.app.clock.now().toISOString());
    });
  });
});
