import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApi, type Api } from "@/lib/api";
import { createAppletService } from "@/lib/applets/service";
import { createAuth } from "@/lib/auth";
import { createApp } from "@/lib/app";
import { silentLogger } from "@/lib/core/log";
import { bootAuth, shutAuth, type BootedAuth } from "../helpers/auth";

type Booted = BootedAuth;

const opened: Booted[] = [];

afterEach(async () => {
  for (const b of opened.splice(0)) await shutAuth(b);
});

/** Boots like server.ts does, with nothing in the environment but DATA_DIR (and what a test adds). */
async function boot(env: Record<string, string> = {}, dir = mkdtempSync(path.join(tmpdir(), "whenthen-setup-"))): Promise<Booted> {
  const b = await bootAuth(env, dir);
  opened.push(b);
  return b;
}

const post = (api: Api, p: string, body: unknown, headers: Record<string, string> = {}) =>
  api.handle(new Request(`http://localhost:3000${p}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) }));

const page = (b: Booted, p: string, cookie?: string) => fetch(b.base + p, { redirect: "manual", headers: cookie ? { cookie } : {} });

/** `whenthen_session=<value>` from a Set-Cookie header. */
const sessionCookie = (res: Response): string => (res.headers.get("set-cookie") ?? "").split(";")[0]!;

describe("AC15: fresh start", () => {
  it("AC15: fresh start with an empty env and DATA_DIR: / goes to /setup, setup creates the one user with a session, a second setup is 404, both secrets are on disk", async () => {
    const b = await boot();
    expect(await b.app.store.users.count()).toBe(0);
    expect(await b.auth.hasUser()).toBe(false);

    const root = await page(b, "/");
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/setup");
    // Before the admin exists there is nothing to sign in to.
    expect((await page(b, "/login")).headers.get("location")).toBe("/setup");
    expect((await page(b, "/setup")).status).toBe(200);

    const created = await post(b.api, "/api/setup", { email: " Owner@Example.com ", password: "correct horse battery" });
    expect(created.status).toBe(201);
    expect(await created.json()).toEqual({ email: "owner@example.com" });
    const cookie = sessionCookie(created);
    expect(cookie).toMatch(/^whenthen_session=[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);

    expect(await b.app.store.users.count()).toBe(1);
    const user = (await b.app.store.users.first())!;
    expect(user.email).toBe("owner@example.com");
    expect(user.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(user.passwordHash).not.toContain("correct horse battery");

    // The cookie from setup is a working session.
    const session = await b.api.handle(new Request("http://localhost:3000/api/session", { headers: { cookie } }));
    expect(session.status).toBe(200);
    expect(await session.json()).toEqual({ email: "owner@example.com" });
    expect((await page(b, "/", cookie)).status).toBe(200);

    const again = await post(b.api, "/api/setup", { email: "intruder@example.com", password: "another long password" });
    expect(again.status).toBe(404);
    expect(again.headers.get("set-cookie")).toBeNull();
    expect(await b.app.store.users.count()).toBe(1);

    // The setup page stops existing.
    expect((await page(b, "/setup")).headers.get("location")).toBe("/login");
    expect((await page(b, "/setup", cookie)).headers.get("location")).toBe("/login");

    for (const name of ["SESSION_SECRET", "SECRETS_KEY"]) {
      const file = path.join(b.dir, name);
      expect(existsSync(file)).toBe(true);
      expect(readFileSync(file, "utf8").trim()).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    }
    expect(Buffer.from(readFileSync(path.join(b.dir, "SECRETS_KEY"), "utf8").trim(), "base64")).toHaveLength(32);
    expect(b.app.config.sessionSecret).toBe(readFileSync(path.join(b.dir, "SESSION_SECRET"), "utf8").trim());
  });

  it("AC15: setup refuses a malformed email and a short password with both problems, and creates nothing", async () => {
    const b = await boot();
    const res = await post(b.api, "/api/setup", { email: "not an email", password: "short" });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { problems: { path: string; message: string }[] };
    expect(body.problems.map((p) => p.path).sort()).toEqual(["email", "password"]);
    expect(body.problems.find((p) => p.path === "password")!.message).toContain("at least 10 characters");
    expect(await b.app.store.users.count()).toBe(0);

    const missing = await post(b.api, "/api/setup", {});
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { problems: { path: string }[] }).problems.map((p) => p.path).sort()).toEqual(["email", "password"]);
    // Exactly ten characters is enough.
    expect((await post(b.api, "/api/setup", { email: "a@localhost", password: "0123456789" })).status).toBe(201);
  });

  it("AC15: two setups racing create one user (in one process and from a second connection to the same database)", async () => {
    const b = await boot();
    const results = await Promise.all([
      post(b.api, "/api/setup", { email: "first@example.com", password: "first long password" }),
      post(b.api, "/api/setup", { email: "second@example.com", password: "second long password" }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 404]);
    expect(await b.app.store.users.count()).toBe(1);

    // A second process on the same DATA_DIR: its own connection, its own auth, still one user.
    const dir = mkdtempSync(path.join(tmpdir(), "whenthen-setup-"));
    const one = await boot({}, dir);
    const twoApp = createApp({ env: { DATA_DIR: dir }, log: silentLogger });
    try {
      const twoApi = createApi({ app: twoApp, applets: createAppletService(twoApp), auth: createAuth(twoApp) });
      const raced = await Promise.all([
        post(one.api, "/api/setup", { email: "one@example.com", password: "one long password" }),
        post(twoApi, "/api/setup", { email: "two@example.com", password: "two long password" }),
      ]);
      expect(raced.map((r) => r.status).sort()).toEqual([201, 404]);
      expect(await one.app.store.users.count()).toBe(1);
    } finally {
      void twoApp.close();
    }
  });

  it("AC15: ADMIN_EMAIL and ADMIN_PASSWORD create the admin on first start, once", async () => {
    const b = await boot({ ADMIN_EMAIL: "Admin@Example.com", ADMIN_PASSWORD: "admin password from env" });
    expect(await b.app.store.users.count()).toBe(1);
    const admin = await b.app.store.users.byEmail("admin@example.com");
    expect(admin?.passwordHash).toMatch(/^\$argon2id\$/);

    // No setup page, no setup endpoint: straight to login.
    expect((await page(b, "/")).headers.get("location")).toBe("/login?next=%2F");
    expect((await page(b, "/setup")).headers.get("location")).toBe("/login");
    expect((await post(b.api, "/api/setup", { email: "x@example.com", password: "xxxxxxxxxxxx" })).status).toBe(404);

    const login = await post(b.api, "/api/login", { email: "admin@example.com", password: "admin password from env" });
    expect(login.status).toBe(200);
    expect(sessionCookie(login)).toMatch(/^whenthen_session=/);

    // A later start with other values changes nothing: the env only seeds the first start.
    const again = createApp({ env: { DATA_DIR: b.dir, ADMIN_EMAIL: "other@example.com", ADMIN_PASSWORD: "a different password" }, log: silentLogger });
    try {
      await createAuth(again).ensureAdminFromEnv();
      expect(await again.store.users.count()).toBe(1);
      expect((await again.store.users.byEmail("admin@example.com"))?.passwordHash).toBe(admin!.passwordHash);
    } finally {
      void again.close();
    }
  });

  it("AC15: an ADMIN_PASSWORD that breaks the password rule stops the start with a clear message; one variable alone leaves setup to the browser", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "whenthen-setup-"));
    const app = createApp({ env: { DATA_DIR: dir, ADMIN_EMAIL: "admin@example.com", ADMIN_PASSWORD: "short" }, log: silentLogger });
    try {
      await expect(createAuth(app).ensureAdminFromEnv()).rejects.toThrow(/ADMIN_PASSWORD password must be at least 10 characters/);
      expect(await app.store.users.count()).toBe(0);
    } finally {
      void app.close();
      rmSync(dir, { recursive: true, force: true });
    }

    const b = await boot({ ADMIN_EMAIL: "admin@example.com" });
    expect(await b.app.store.users.count()).toBe(0);
    expect((await page(b, "/")).headers.get("location")).toBe("/setup");
  });
});
