import { readFileSync } from "node:fs";
import { afterEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { testIdentity } from "../helpers/auth";
import { createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";

const fixture = JSON.parse(readFileSync(new URL("../../fixtures/export.json", import.meta.url), "utf8")) as {
  id: string;
  webhook_token: string;
  definition: unknown;
  enabled: boolean;
}[];

forEachEngine((engine) => {
  const apps: TestApp[] = [];
  afterEach(() => apps.splice(0).forEach((a) => a.cleanup()));
  const fresh = () => {
    const app = createTestApp({ engine });
    apps.push(app);
    return { app, api: createApi({ app, applets: app.applets, auth: testIdentity(app) }) };
  };
  const post = (path: string, body: unknown) => new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  describe("AC13: export and import", () => {
    test("AC13: export, then import into an empty database, recreates every applet with the same ids, webhook tokens and definitions", async () => {
      const source = fresh();
      const first = await source.api.handle(post("/api/import", fixture));
      expect(first.status).toBe(200);
      const exported = (await (await source.api.handle(new Request("http://localhost/api/export"))).json()) as typeof fixture;
      expect(exported.map((a) => a.id)).toEqual(fixture.map((a) => a.id));

      const target = fresh();
      expect(await target.app.store.applets.list()).toHaveLength(0);
      const res = await target.api.handle(post("/api/import", exported));
      expect(await res.json()).toEqual({ created: fixture.map((a) => a.id), replaced: [] });
      for (const original of exported) {
        const a = (await target.app.store.applets.get(original.id))!;
        expect(a.webhookToken).toBe(original.webhook_token);
        expect(a.definition).toEqual(original.definition);
        expect(a.enabled).toBe(original.enabled);
      }
      // The webhook URL survives the move; a schedule gets its next fire time; a paused feed stays unscheduled.
      const detail = (await (await target.api.handle(new Request(`http://localhost/api/applets/${fixture[0]!.id}`))).json()) as { applet: { webhook_url: string } };
      expect(detail.applet.webhook_url).toMatch(new RegExp(`/api/hooks/${fixture[0]!.id}/${fixture[0]!.webhook_token}$`));
      expect((await target.app.store.triggerState.get(fixture[1]!.id))?.nextRunAt).toBeTruthy();
      expect((await target.app.store.triggerState.get(fixture[2]!.id))?.nextRunAt ?? null).toBeNull();
    });

    test("AC13: an existing id is refused unless overwrite=true, and a bad file imports nothing", async () => {
      const { app, api } = fresh();
      await api.handle(post("/api/import", fixture));
      const again = await api.handle(post("/api/import", fixture));
      expect(again.status).toBe(400);
      const body = (await again.json()) as { problems: { path: string; message: string }[] };
      expect(body.problems[0]!.message).toMatch(/exists; import with overwrite/);

      const renamed = fixture.map((a, i) => (i === 0 ? { ...a, name: "Renamed on import" } : a));
      const over = await api.handle(post("/api/import?overwrite=true", renamed));
      expect(await over.json()).toEqual({ created: [], replaced: fixture.map((a) => a.id) });
      expect((await app.store.applets.get(fixture[0]!.id))!.name).toBe("Renamed on import");

      const other = fresh();
      const broken = [
        { ...fixture[0]!, id: "0192f3a0-0000-7000-8000-00000000000a" },
        { ...fixture[1]!, id: "0192f3a0-0000-7000-8000-00000000000b", definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [], colour: "red" } },
      ];
      const refused = await other.api.handle(post("/api/import", broken));
      expect(refused.status).toBe(400);
      const problems = ((await refused.json()) as { problems: { path: string; message: string }[] }).problems;
      expect(problems).toEqual(
        expect.arrayContaining([
          { path: "1.definition", message: "unknown key: colour" },
          expect.objectContaining({ path: "1.definition.actions" }),
        ]),
      );
      expect(await other.app.store.applets.list()).toHaveLength(0);
    });

    test("AC13: an applet whose webhook token another applet already uses is refused with 400 naming that applet, and nothing is imported", async () => {
      const { app, api } = fresh();
      const holder = await app.applets.create({ name: "Shop orders", definition: fixture[0]!.definition, webhookToken: fixture[0]!.webhook_token });
      const res = await api.handle(post("/api/import", fixture));
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: string; problems: { path: string; message: string }[] };
      expect(body.problems).toEqual([{ path: "0.webhook_token", message: expect.stringContaining(`already used by applet "Shop orders" (${holder.id})`) }]);
      expect((await app.store.applets.list()).map((a) => a.id)).toEqual([holder.id]);

      // The same with overwrite: the holder is not one of the applets being replaced.
      const over = await api.handle(post("/api/import?overwrite=true", fixture));
      expect(over.status).toBe(400);
      expect((await app.store.applets.list()).map((a) => a.id)).toEqual([holder.id]);
    });

    test("AC13: two applets in one file with the same webhook token are refused, and nothing is imported", async () => {
      const { app, api } = fresh();
      const twins = [fixture[0]!, { ...fixture[1]!, webhook_token: fixture[0]!.webhook_token }];
      const res = await api.handle(post("/api/import", twins));
      expect(res.status).toBe(400);
      const body = (await res.json()) as { problems: { path: string; message: string }[] };
      expect(body.problems).toEqual([{ path: "1.webhook_token", message: expect.stringMatching(/same webhook token as applet 0/) }]);
      expect(await app.store.applets.list()).toHaveLength(0);
    });

    test("AC13: with overwrite, applets replaced by the same import may swap their webhook tokens", async () => {
      const { app, api } = fresh();
      await api.handle(post("/api/import", fixture));
      // Swap the tokens of the first two applets: each token is held by the other applet until the import is done.
      const swapped = fixture.map((a, i) => (i === 0 ? { ...a, webhook_token: fixture[1]!.webhook_token } : i === 1 ? { ...a, webhook_token: fixture[0]!.webhook_token } : a));
      const res = await api.handle(post("/api/import?overwrite=true", swapped));
      expect(res.status).toBe(200);
      expect((await app.store.applets.get(fixture[0]!.id))!.webhookToken).toBe(fixture[1]!.webhook_token);
      expect((await app.store.applets.get(fixture[1]!.id))!.webhookToken).toBe(fixture[0]!.webhook_token);
    });
  });

  describe("importing a file with applets that exist here", () => {
    test("restoring one deleted applet imports it and leaves the existing ones (existing=skip), replacing only those asked for", async () => {
      const { app, api } = fresh();
      await api.handle(post("/api/import", fixture));
      const [gone, renamed] = [fixture[0]!, fixture[1]!];
      await app.applets.delete(gone.id);
      await app.applets.update(renamed.id, { name: "Renamed here" });
      const third = fixture[2]!;
      await app.applets.update(third.id, { name: "Also renamed here" });

      // Refused as before when nothing is said: the UI learns which ones exist from this answer.
      const asked = await api.handle(post("/api/import", fixture));
      expect(asked.status).toBe(400);
      expect(((await asked.json()) as { problems: unknown[] }).problems).toHaveLength(fixture.length - 1);

      const res = await api.handle(post(`/api/import?existing=skip&replace=${third.id}`, fixture));
      expect(res.status).toBe(200);
      const body = (await res.json()) as { created: string[]; replaced: string[]; skipped: string[] };
      expect(body.created).toEqual([gone.id]);
      expect(body.replaced).toEqual([third.id]);
      expect(body.skipped).toHaveLength(fixture.length - 2);
      expect(await app.store.applets.get(gone.id)).not.toBeNull();
      expect((await app.store.applets.get(renamed.id))!.name).toBe("Renamed here");
      expect((await app.store.applets.get(third.id))!.name).not.toBe("Also renamed here");
    });
  });
});
