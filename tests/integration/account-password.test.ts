import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Api } from "@/lib/api";
import { bootAuth, shutAuth, type BootedAuth } from "../helpers/auth";

/** "Account": the password changed in Settings (old one required; every other session ends, this one stays). */
const EMAIL = "owner@example.com";
const PASSWORD = "correct horse battery staple";
const NEW_PASSWORD = "a brand new long password";

function call(api: Api, method: string, p: string, opts: { cookie?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...opts.headers, "content-type": "application/json" };
  if (opts.cookie) headers.cookie = opts.cookie;
  return api.handle(new Request(`http://localhost:3000${p}`, { method, headers, body: method === "GET" ? undefined : JSON.stringify(opts.body ?? {}) }));
}
const cookieOf = (res: Response): string => (res.headers.get("set-cookie") ?? "").split(";")[0]!;

let b: BootedAuth;
beforeAll(async () => {
  b = await bootAuth();
  expect((await call(b.api, "POST", "/api/setup", { body: { email: EMAIL, password: PASSWORD } })).status).toBe(201);
});
afterAll(async () => {
  await shutAuth(b);
});

async function signIn(password: string): Promise<Response> {
  return call(b.api, "POST", "/api/login", { body: { email: EMAIL, password } });
}

describe("Account — change the password in Settings", () => {
  it("a wrong or missing current password, or a short new one, is refused under its field and changes nothing", async () => {
    const cookie = cookieOf(await signIn(PASSWORD));
    const wrong = await call(b.api, "POST", "/api/account/password", { cookie, body: { current_password: "not it at all", new_password: NEW_PASSWORD } });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { problems: unknown[] }).problems).toEqual([{ path: "current_password", message: "current password is wrong" }]);
    const missing = await call(b.api, "POST", "/api/account/password", { cookie, body: { new_password: "short" } });
    expect(missing.status).toBe(400);
    const problems = ((await missing.json()) as { problems: { path: string; message: string }[] }).problems;
    expect(problems).toContainEqual({ path: "current_password", message: "current password is required" });
    expect(problems).toContainEqual({ path: "new_password", message: "new password must be at least 10 characters" });
    const same = await call(b.api, "POST", "/api/account/password", { cookie, body: { current_password: PASSWORD, new_password: PASSWORD } });
    expect(((await same.json()) as { problems: unknown[] }).problems).toEqual([{ path: "new_password", message: "new password is the same as the current one" }]);
    // Nothing changed: the session still works and the old password still signs in.
    expect((await call(b.api, "GET", "/api/session", { cookie })).status).toBe(200);
    expect((await signIn(PASSWORD)).status).toBe(200);
  });

  it("the change ends every other session, keeps this one (a fresh cookie), and only the new password signs in", async () => {
    const mine = cookieOf(await signIn(PASSWORD));
    const other = cookieOf(await signIn(PASSWORD));
    const res = await call(b.api, "POST", "/api/account/password", { cookie: mine, body: { current_password: PASSWORD, new_password: NEW_PASSWORD } });
    expect(res.status).toBe(200);
    const fresh = cookieOf(res);
    expect(fresh).toMatch(/^whenthen_session=.+/);
    expect(fresh).not.toBe(mine);
    expect((await call(b.api, "GET", "/api/session", { cookie: fresh })).status).toBe(200);
    expect((await call(b.api, "GET", "/api/session", { cookie: other })).status).toBe(401);
    expect((await call(b.api, "GET", "/api/session", { cookie: mine })).status).toBe(401);
    expect((await signIn(PASSWORD)).status).toBe(401);
    expect((await signIn(NEW_PASSWORD)).status).toBe(200);
  });

  it("an API token cannot change the password (403), and without a session it is 401", async () => {
    const cookie = cookieOf(await signIn(NEW_PASSWORD));
    const made = (await (await call(b.api, "POST", "/api/tokens", { cookie, body: { name: "cli" } })).json()) as { token: string };
    const withToken = await call(b.api, "POST", "/api/account/password", { headers: { authorization: `Bearer ${made.token}` }, body: { current_password: NEW_PASSWORD, new_password: "yet another password" } });
    expect(withToken.status).toBe(403);
    expect((await call(b.api, "POST", "/api/account/password", { body: { current_password: NEW_PASSWORD, new_password: "yet another password" } })).status).toBe(401);
    expect((await signIn(NEW_PASSWORD)).status).toBe(200);
  });
});
