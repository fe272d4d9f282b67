import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApi, type Api, type ApiDeps } from "@/lib/api";
import { createTestApp, type TestApp } from "../helpers/db";
import { bootAuth, shutAuth, testIdentity, type BootedAuth } from "../helpers/auth";

/**
 * The API's auth is a guard that is always mounted, and the route table itself says which
 * routes are public, so a route added tomorrow is covered without anyone remembering to list it.
 */

const call = (api: Api, method: string, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) =>
  api.handle(
    new Request(`http://localhost:3000${path}`, {
      method,
      headers: { ...(method === "GET" ? {} : { "content-type": "application/json" }), ...init.headers },
      body: method === "GET" ? undefined : JSON.stringify(init.body ?? {}),
    }),
  );

/** A concrete path for a route pattern: every `:param` becomes a value no row has. */
const concrete = (pattern: string) => pattern.replace(/:[A-Za-z_]+/g, "nothing-here");

let b: BootedAuth;
beforeAll(async () => {
  b = await bootAuth();
});
afterAll(async () => {
  await shutAuth(b);
});

describe("the route table and the session guard", () => {
  it("every route of the route table that is not marked public answers 401 without a session, listed from the table itself", async () => {
    const routes = b.api.routes();
    // Guard the guard: a table that lists nothing would pass vacuously.
    expect(routes.length).toBeGreaterThanOrEqual(25);
    const guarded = routes.filter((r) => !r.public);
    for (const r of guarded) {
      const res = await call(b.api, r.method, concrete(r.path), { body: { name: "X", value: "y", definition: {} } });
      expect(res.status, `${r.method} ${r.path}`).toBe(401);
      expect(await res.json(), `${r.method} ${r.path}`).toEqual({ error: "sign in required" });
    }
    // Nothing got through.
    expect(await b.app.store.applets.list()).toEqual([]);
    expect(await b.app.secrets.list()).toEqual([]);
  });

  it("exactly setup, login and logout are public; a new public route has to be added here on purpose", () => {
    expect(b.api.routes().filter((r) => r.public).map((r) => `${r.method} ${r.path}`).sort()).toEqual(["POST /api/login", "POST /api/logout", "POST /api/setup"]);
  });

  it("an API cannot be built without an identity", () => {
    const t = createTestApp();
    try {
      // @ts-expect-error: auth is required by the type as well.
      const deps: ApiDeps = { app: t, applets: t.applets };
      expect(() => createApi(deps)).toThrow(/auth is required/);
    } finally {
      void t.cleanup();
    }
  });

  it("unknown paths are 404 and a known path with another method 405, before the session is looked at", async () => {
    expect((await call(b.api, "GET", "/api/no-such-thing")).status).toBe(404);
    const wrong = await call(b.api, "PATCH", "/api/applets");
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
    expect(await wrong.json()).toEqual({ error: "method PATCH not allowed" });
  });
});

describe("request bodies are validated with an error that names the field", () => {
  let t: TestApp;
  let api: Api;
  beforeAll(() => {
    t = createTestApp();
    api = createApi({ app: t, applets: t.applets, auth: testIdentity(t) });
  });
  afterAll(() => t.cleanup());

  it("a secret whose value is not text is refused with the field named, and nothing is stored", async () => {
    const res = await call(api, "POST", "/api/secrets", { body: { name: "TOKEN", value: 42 } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; problems: { path: string; message: string }[] };
    expect(body.problems).toEqual([{ path: "value", message: "value is required: the secret's text" }]);
    expect(body.error).toBe("secret: value is required: the secret's text");
    expect(await t.secrets.list()).toEqual([]);
  });

  it("an applet with a misspelt key and a name that is not text gets both problems at once", async () => {
    const res = await call(api, "POST", "/api/applets", { body: { name: 7, enabeld: true, definition: {} } });
    expect(res.status).toBe(400);
    const { problems } = (await res.json()) as { problems: { path: string; message: string }[] };
    expect(problems).toEqual(expect.arrayContaining([{ path: "name", message: "name must be text" }, { path: "", message: "unknown key: enabeld" }]));
    expect(await t.store.applets.list()).toEqual([]);
  });

  it("an update may send only the fields it changes (a rename keeps the definition)", async () => {
    const definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/in", method: "POST" } }] };
    const created = (await (await call(api, "POST", "/api/applets", { body: { name: "before", definition } })).json()) as { applet: { id: string } };
    const renamed = await call(api, "PUT", `/api/applets/${created.applet.id}`, { body: { name: "after" } });
    expect(renamed.status).toBe(200);
    // Stored as the step list it means (version 1's actions are the steps action_1 …).
    expect(await renamed.json()).toMatchObject({ applet: { name: "after", definition: { version: 2, trigger: definition.trigger, steps: [{ id: "action_1", ...definition.actions[0] }] } } });
    expect((await call(api, "DELETE", `/api/applets/${created.applet.id}`)).status).toBe(200);
  });

  it("a body that is not an object, and an import that is not an array, say what was expected", async () => {
    const list = await call(api, "POST", "/api/secrets", { body: ["TOKEN"] });
    expect(list.status).toBe(400);
    expect(await list.json()).toMatchObject({ error: "secret must be a JSON object", problems: [{ path: "", message: "expected an object" }] });
    const imported = await call(api, "POST", "/api/import", { body: { not: "an array" } });
    expect(imported.status).toBe(400);
    expect(((await imported.json()) as { error: string }).error).toBe("import: expected a JSON array of applets, as GET /api/export writes it");
  });

  it("a query string is validated too", async () => {
    const res = await api.handle(new Request("http://localhost:3000/api/import?overwrite=yes", { method: "POST", headers: { "content-type": "application/json" }, body: "[]" }));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ problems: [{ path: "overwrite", message: 'overwrite must be "true" or "false"' }] });
  });
});
