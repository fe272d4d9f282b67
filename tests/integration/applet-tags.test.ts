import { afterEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { newWebhookToken } from "@/lib/core/ids";
import { testIdentity } from "../helpers/auth";
import { createTestApp } from "../helpers/db";
import { forEachEngine, type TestEngine } from "../helpers/engines";

/** Tags: stored, editable through the API, carried by export and import; on each engine. */

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "note", config: { filename: "n.md", content: "x" } }] };

function boot(engine: TestEngine) {
  const app = createTestApp({ engine });
  cleanups.push(() => app.cleanup());
  const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
  const call = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await api.handle(new Request(`http://localhost${path}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) }));
    return { status: res.status, body: (await res.json()) as T };
  };
  return { app, call };
}

type AppletAnswer = { applet: { id: string; tags: string[]; name: string } };

forEachEngine((engine) => {
  describe("applet tags", () => {
    test("tags are saved with an applet, edited alone (the definition kept), kept by a save without them, refused under 'tags'", async () => {
      const { call } = boot(engine);
      const made = await call<AppletAnswer>("POST", "/api/applets", { name: "tagged", definition, tags: [" Work ", "work", "finance"] });
      expect(made.status).toBe(201);
      expect(made.body.applet.tags).toEqual(["Work", "finance"]);
      const id = made.body.applet.id;
      const edited = await call<AppletAnswer>("PUT", `/api/applets/${id}`, { tags: ["home"] });
      expect(edited.body.applet).toMatchObject({ name: "tagged", tags: ["home"] });
      // The editor's save sends no tags: they stay.
      const renamed = await call<AppletAnswer>("PUT", `/api/applets/${id}`, { name: "renamed", definition });
      expect(renamed.body.applet.tags).toEqual(["home"]);
      expect(((await call<{ applets: { tags: string[] }[] }>("GET", "/api/applets")).body.applets[0])!.tags).toEqual(["home"]);
      const bad = await call<{ problems: { path: string; message: string }[] }>("PUT", `/api/applets/${id}`, { tags: ["<script>"] });
      expect(bad.status).toBe(400);
      expect(bad.body.problems).toEqual([{ path: "tags", message: 'the tag "<script>" may only hold letters, digits, spaces and - _ . / :' }]);
      expect(((await call<AppletAnswer>("GET", `/api/applets/${id}`)).body.applet).tags).toEqual(["home"]);
      // Duplicate keeps them.
      const copy = await call<AppletAnswer>("POST", `/api/applets/${id}/duplicate`);
      expect(copy.body.applet.tags).toEqual(["home"]);
    });

    test("export carries the tags and import restores them; an export from before tags imports with none", async () => {
      const { app, call } = boot(engine);
      const made = await call<AppletAnswer>("POST", "/api/applets", { name: "exported", definition, tags: ["ops", "Night shift"] });
      const exported = await app.applets.exportAll();
      expect(exported[0]!.tags).toEqual(["ops", "Night shift"]);
      await call("DELETE", `/api/applets/${made.body.applet.id}`);
      const imported = await call<{ created: string[] }>("POST", "/api/import", exported);
      expect(imported.status).toBe(200);
      expect((await app.store.applets.get(made.body.applet.id))!.tags).toEqual(["ops", "Night shift"]);
      const { tags: _tags, ...old } = exported[0]!;
      const other = { ...old, id: "0e0e0e0e-0000-4000-8000-000000000001", webhook_token: newWebhookToken() };
      const older = await call("POST", "/api/import", [other]);
      expect(older.body).toMatchObject({ created: [other.id] });
      expect((await app.store.applets.get(other.id))!.tags).toEqual([]);
    });
  });
});
