import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { Bus } from "@/lib/bus";
import { createIngress } from "@/lib/http/ingress";
import { LISTEN_MS } from "@/lib/webhooks/listen";
import { testIdentity } from "../helpers/auth";
import { createTestApp, webhookToHttp } from "../helpers/db";
import { forEachEngine, type TestEngine } from "../helpers/engines";

/** "Listen for test event": the next request to a (draft) webhook applet becomes a sample; nothing runs while it is disabled. */

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * `webProcesses`: the API and the ingress as two web processes would have them (each its own
 * bus, as in memory per process), on one database.
 */
async function boot(engine: TestEngine, webProcesses: 1 | 2 = 1) {
  const app = createTestApp({ engine });
  cleanups.push(() => app.cleanup());
  const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
  const ingress = createIngress(webProcesses === 1 ? app : { ...app, bus: new Bus() });
  const server: Server = createServer((req, res) => {
    if (!ingress(req, res)) {
      res.writeHead(418);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const call = async <T = Record<string, unknown>>(method: string, path: string): Promise<{ status: number; body: T }> => {
    const res = await api.handle(new Request(`http://localhost${path}`, { method, headers: { "content-type": "application/json" }, body: method === "GET" ? undefined : "{}" }));
    return { status: res.status, body: (await res.json()) as T };
  };
  const hook = async (a: { id: string; webhookToken: string }, body: unknown) =>
    fetch(`${base}/api/hooks/${a.id}/${a.webhookToken}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { app, call, hook };
}

forEachEngine((engine) => {
  describe("listen for test event", () => {
    test("a disabled draft captures the next request while listening (an event, a skipped run, nothing executed); before and after, it answers 'disabled'", async () => {
      const { app, call, hook } = await boot(engine);
      const a = await app.applets.create({ name: "draft", enabled: false, definition: webhookToHttp("https://status.test/status/200") });
      const before = await hook(a, { order: 1 });
      expect(await before.json()).toEqual({ queued: false, reason: "disabled" });
      const started = await call<{ listening_until: string; webhook_url: string }>("POST", `/api/applets/${a.id}/listen`);
      expect(started.status).toBe(200);
      expect(started.body.listening_until).toBe(new Date(app.clock.now().getTime() + LISTEN_MS).toISOString());
      expect(started.body.webhook_url).toContain(`/api/hooks/${a.id}/${a.webhookToken}`);
      const captured = await hook(a, { order: 1042 });
      expect(captured.status).toBe(200);
      const answer = (await captured.json()) as { queued: boolean; event_id: string };
      expect(answer.queued).toBe(false);
      const events = (await call<{ events: { id: string; source: string; payload: { body: unknown } }[] }>("GET", `/api/applets/${a.id}/events`)).body.events;
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ id: answer.event_id, source: "webhook", payload: { body: { order: 1042 } } });
      const { runs } = await app.store.runs.list({ appletId: a.id });
      expect(runs.map((r) => r.status)).toEqual(["skipped"]);
      expect(runs[0]!.error).toMatch(/Listen for test event/);
      // The first request ends the listening: the next one is refused as disabled again.
      expect(await (await hook(a, { order: 2 })).json()).toEqual({ queued: false, reason: "disabled" });
    });

    test("the editor's request and the sender's reach different web processes: the request is still captured, once", async () => {
      const { app, call, hook } = await boot(engine, 2);
      const a = await app.applets.create({ name: "draft", enabled: false, definition: webhookToHttp("https://status.test/status/200") });
      expect((await call("POST", `/api/applets/${a.id}/listen`)).status).toBe(200);
      const answer = (await (await hook(a, { order: 7 })).json()) as { queued: boolean; event_id: string | null };
      expect(answer.event_id).not.toBeNull();
      expect((await app.store.runs.recentEvents(a.id, 10)).map((e) => e.id)).toEqual([answer.event_id]);
      expect(await (await hook(a, { order: 8 })).json()).toEqual({ queued: false, reason: "disabled" });
    });

    test("listening expires after its window, and a cancel stops it; only webhook applets listen", async () => {
      const { app, call, hook } = await boot(engine);
      const a = await app.applets.create({ name: "draft", enabled: false, definition: webhookToHttp("https://status.test/status/200") });
      await call("POST", `/api/applets/${a.id}/listen`);
      app.clock.advance(LISTEN_MS + 1);
      expect(await (await hook(a, { late: true })).json()).toEqual({ queued: false, reason: "disabled" });
      await call("POST", `/api/applets/${a.id}/listen`);
      expect((await call("DELETE", `/api/applets/${a.id}/listen`)).status).toBe(200);
      expect(await (await hook(a, { cancelled: true })).json()).toEqual({ queued: false, reason: "disabled" });
      expect(await app.store.runs.recentEvents(a.id, 10)).toEqual([]);
      const sched = await app.applets.create({ name: "s", enabled: false, definition: { version: 1, trigger: { type: "schedule", config: { cron: "0 8 * * *", timezone: "UTC" } }, actions: [{ type: "note", config: { filename: "n.md", content: "x" } }] } });
      expect((await call("POST", `/api/applets/${sched.id}/listen`)).status).toBe(400);
      expect((await call("POST", "/api/applets/nope/listen")).status).toBe(404);
    });
  });
});
