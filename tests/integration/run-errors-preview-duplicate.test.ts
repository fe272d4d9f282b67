import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { testIdentity } from "../helpers/auth";
import { createSandbox, type Sandbox } from "@/lib/sandbox";
import { createTestApp } from "../helpers/db";
import { forEachEngine, type TestEngine } from "../helpers/engines";
import { SLACK_WEBHOOK, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/** The parts below the UI: run errors that name their cause, save warnings, import. */

useHttpMocks();

let sandbox: Sandbox;
beforeAll(() => {
  sandbox = createSandbox({ threads: 1 });
});
afterAll(() => sandbox.close());

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function idleApp(engine: TestEngine) {
  const app = createTestApp({ engine });
  cleanups.push(() => app.cleanup());
  return app;
}

function setup(engine: TestEngine) {
  const app = idleApp(engine);
  return { app, worker: begin(app) };
}

/** The worker claims as soon as a run is queued: a test that puts a run in a state first starts it after. */
function begin(app: ReturnType<typeof createTestApp>) {
  const worker = startWorker(app, { deps: { sandbox } });
  cleanups.push(() => worker.stop());
  return worker;
}

const slack = (webhook_url: string, extra: Record<string, unknown> = {}) => ({
  version: 1,
  trigger: { type: "webhook", config: {} },
  actions: [{ type: "slack", config: { webhook_url, text: "hi {{trigger.body.title}}" } }],
  ...extra,
});

forEachEngine((engine) => {
  describe("run errors say what went wrong", () => {
    test("an endless loop on line 2 fails with 'filter: timed out … (line 2)', the prefix said once", async () => {
      const { app, worker } = setup(engine);
      const a = await app.applets.create({ name: "loop", definition: slack(SLACK_WEBHOOK, { filter: { code: "const title = trigger.body.title;\nwhile (true) {}" } }) });
      const runId = (await app.applets.test(a.id, { body: { title: "x" } })).runId;
      await worker.drain();
      const r = (await app.store.runs.get(runId))!;
      expect(r.status).toBe("failed");
      expect(r.error).toBe("filter: timed out after 1000 ms (line 2)");
    });

    test("a thrown error keeps one 'filter: ' prefix", async () => {
      const { app, worker } = setup(engine);
      const a = await app.applets.create({ name: "throws", definition: slack(SLACK_WEBHOOK, { filter: { code: "\nthrow new Error('no title')" } }) });
      const runId = (await app.applets.test(a.id, { body: {} })).runId;
      await worker.drain();
      expect((await app.store.runs.get(runId))!.error).toBe("filter: Error: no title (line 2)");
    });

    test("a run whose action names a deleted secret fails with an error that names the secret", async () => {
      const { app, worker } = setup(engine);
      await app.secrets.set("TEMP_TOKEN", SLACK_WEBHOOK);
      const a = await app.applets.create({ name: "uses a secret", definition: slack("{{secrets.TEMP_TOKEN}}") });
      await app.secrets.delete("TEMP_TOKEN");
      const runId = (await app.applets.test(a.id, { body: { title: "x" } })).runId;
      await worker.drain();
      const r = (await app.store.runs.get(runId))!;
      expect(r.status).toBe("failed");
      expect(r.error).toMatch(/^action 1 \(slack\): unresolved: secrets\.TEMP_TOKEN \(no secret with this name exists\)/);
    });

    test("saving an applet that names a secret that does not exist warns, and still saves", async () => {
      const { app } = setup(engine);
      const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
      const res = await api.handle(new Request("http://localhost/api/applets", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "s", definition: slack("{{secrets.NOPE}}") }) }));
      expect(res.status).toBe(201);
      const body = (await res.json()) as { warnings: { path: string; message: string }[] };
      expect(body.warnings).toEqual([{ path: "definition.actions.0.config.webhook_url", message: expect.stringContaining("no secret named NOPE") }]);
      await app.secrets.set("NOPE", SLACK_WEBHOOK);
      const again = await api.handle(new Request("http://localhost/api/applets", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "s", definition: slack("{{secrets.NOPE}}") }) }));
      expect(((await again.json()) as { warnings: unknown[] }).warnings).toEqual([]);
    });
  });

  describe("the preview renders what a run renders", () => {
    test("{{now_local}} resolves in the preview, in the applet's zone, and the picker offers it", async () => {
      const { app } = setup(engine);
      const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
      const definition = { ...slack(SLACK_WEBHOOK), timezone: "Europe/Berlin", actions: [{ type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "at {{now_local}}" } }] };
      const res = await api.handle(new Request("http://localhost/api/applets/preview", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ definition, sample: {} }) }));
      const body = (await res.json()) as { actions: { rendered: { text: string }; unresolved: string[] }[] };
      expect(body.actions[0]!.unresolved).toEqual([]);
      // The test clock starts at 2026-03-07T12:00Z: 13:00 in Berlin.
      expect(body.actions[0]!.rendered.text).toBe("at 2026-03-07T13:00:00.000+01:00");
      const { ingredientGroups } = await import("@/lib/ui/format");
      const run = ingredientGroups({ trigger: undefined, secrets: [] }).find((g) => g.label === "Run")!;
      expect(run.options.map((o) => o.value)).toContain("{{now_local}}");
    });
  });

  describe("a crash re-run is told apart from a clean retry", () => {
    test("only a run that resumed the same attempt marks the step that ran again", async () => {
      const app = idleApp(engine);
      const two = { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "one" } }, { type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "two" } }] };
      const a = await app.applets.create({ name: "two steps", definition: two });
      // As a worker leaves a run it was killed in: action 1 recorded at attempt 1, action 2 in flight,
      // and the run handed back to the queue by the lease rule (same attempt).
      const crashed = (await app.applets.test(a.id, { body: {} })).runId;
      const kept = { kind: "action", name: "slack", index: 0, status: "succeeded", attempt: 1, input: {}, output: { response: "ok" }, warnings: [], logs: [], started_at: "2026-03-07T11:59:00.000Z", duration_ms: 5 };
      await app.sql.run("UPDATE runs SET steps = ? WHERE id = ?", JSON.stringify([kept]), crashed);
      // A run that failed for real and was retried by hand: attempt 2, nothing ran twice.
      const failing = await app.applets.create({ name: "fails", definition: slack(SLACK_WEBHOOK, { actions: [{ type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "{{trigger.body.missing}}" } }] }) });
      const retried = (await app.applets.test(failing.id, { body: {} })).runId;
      const worker = begin(app);
      await worker.drain();
      expect((await app.store.runs.get(retried))!.status).toBe("failed");
      expect(await app.store.runs.retry(retried, app.clock.now())).toBe(true);
      await worker.drain();

      const c = (await app.store.runs.get(crashed))!;
      expect(c.status).toBe("succeeded");
      expect(c.steps.map((s) => s.rerun ?? false)).toEqual([false, true]);
      const r = (await app.store.runs.get(retried))!;
      expect(r.attempt).toBe(2);
      expect(r.steps.some((s) => s.rerun)).toBe(false);
    });
  });

  describe("duplicate", () => {
    test("duplicating an applet makes a disabled copy with its own id and webhook token", async () => {
      const { app } = setup(engine);
      const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
      const a = await app.applets.create({ name: "Orders", definition: slack(SLACK_WEBHOOK) });
      const res = await api.handle(new Request(`http://localhost/api/applets/${a.id}/duplicate`, { method: "POST" }));
      expect(res.status).toBe(201);
      const { applet } = (await res.json()) as { applet: { id: string; name: string; enabled: boolean; webhook_token: string; definition: unknown } };
      expect(applet).toMatchObject({ name: "Orders (copy)", enabled: false, definition: a.definition });
      expect(applet.id).not.toBe(a.id);
      expect(applet.webhook_token).not.toBe(a.webhookToken);
    });
  });
});
