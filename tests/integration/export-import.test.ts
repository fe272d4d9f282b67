import { readFileSync } from "node:fs";
import { afterEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api/router";
import { createTestApp, type TestApp } from "../helpers/db";

const fixture = JSON.parse(readFileSync(new URL("../../fixtures/export.json", import.meta.url), "utf8")) as {
  id: string;
  webhook_token: string;
  definition: unknown;
  enabled: boolean;
}[];

const apps: TestApp[] = [];
afterEach(() => apps.splice(0).forEach((a) => a.cleanup()));
const fresh = () => {
  const app = createTestApp();
  apps.push(app);
  return { app, api: createApi({ app, applets: app.applets }) };
};
const post = (path: string, body: unknown) => new Request(`http://localhost${path}`, { method: "POST", body: JSON.stringify(body) });

describe("AC13: export and import", () => {
  test("AC13: export, then import into an empty database, recreates every applet with the same ids, webhook tokens and definitions", async () => {
    const source = fresh();
    const first = await source.api.handle(post("/api/import", fixture));
    expect(first.status).toBe(200);
    const exported = (await (await source.api.handle(new Request("http://localhost/api/export"))).json()) as typeof fixture;
    expect(exported.map((a) => a.id)).toEqual(fixture.map((a) => a.id));

    const target = fresh();
    expect(target.app.repos.applets.list()).toHaveLength(0);
    const res = await target.api.handle(post("/api/import", exported));
    expect(await res.json()).toEqual({ created: fixture.map((a) => a.id), replaced: [] });
    for (const original of exported) {
      const a = target.app.repos.applets.get(original.id)!;
      expect(a.webhookToken).toBe(original.webhook_token);
      expect(a.definition).toEqual(original.definition);
      expect(a.enabled).toBe(original.enabled);
    }
    // The webhook URL survives the move; a schedule gets its next fire time; a paused feed stays unscheduled.
    const detail = (await (await target.api.handle(new Request(`http://localhost/api/applets/${fixture[0]!.id}`))).json()) as { applet: { webhook_url: string } };
    expect(detail.applet.webhook_url).toMatch(new RegExp(`/api/hooks/${fixture[0]!.id}/${fixture[0]!.webhook_token}$`));
    expect(target.app.repos.triggerState.get(fixture[1]!.id)?.nextRunAt).toBeTruthy();
    expect(target.app.repos.triggerState.get(fixture[2]!.id)?.nextRunAt ?? null).toBeNull();
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
    expect(app.repos.applets.get(fixture[0]!.id)!.name).toBe("Renamed on import");

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
    expect(other.app.repos.applets.list()).toHaveLength(0);
  });
});
