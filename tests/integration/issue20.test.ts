import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api/router";
import { createSandbox, type Sandbox } from "@/lib/sandbox";
import { createTestApp } from "../helpers/db";
import { SLACK_WEBHOOK, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/** Issue #20, the parts below the UI: run errors that name their cause, save warnings, import. */

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

function setup() {
  const app = createTestApp();
  const worker = startWorker(app, { deps: { sandbox } });
  cleanups.push(() => app.cleanup(), () => worker.stop());
  return { app, worker };
}

const slack = (webhook_url: string, extra: Record<string, unknown> = {}) => ({
  version: 1,
  trigger: { type: "webhook", config: {} },
  actions: [{ type: "slack", config: { webhook_url, text: "hi {{trigger.body.title}}" } }],
  ...extra,
});

describe("#20: run errors say what went wrong", () => {
  test("#20.8: an endless loop on line 2 fails with 'filter: timed out … (line 2)', the prefix said once", async () => {
    const { app, worker } = setup();
    const a = app.applets.create({ name: "loop", definition: slack(SLACK_WEBHOOK, { filter: { code: "const title = trigger.body.title;\nwhile (true) {}" } }) });
    const runId = app.applets.test(a.id, { body: { title: "x" } }).runId;
    await worker.drain();
    const r = app.repos.runs.get(runId)!;
    expect(r.status).toBe("failed");
    expect(r.error).toBe("filter: timed out after 1000 ms (line 2)");
  });

  test("#20.8: a thrown error keeps one 'filter: ' prefix", async () => {
    const { app, worker } = setup();
    const a = app.applets.create({ name: "throws", definition: slack(SLACK_WEBHOOK, { filter: { code: "\nthrow new Error('no title')" } }) });
    const runId = app.applets.test(a.id, { body: {} }).runId;
    await worker.drain();
    expect(app.repos.runs.get(runId)!.error).toBe("filter: Error: no title (line 2)");
  });

  test("#20.7: a run whose action names a deleted secret fails with an error that names the secret", async () => {
    const { app, worker } = setup();
    app.secrets.set("TEMP_TOKEN", SLACK_WEBHOOK);
    const a = app.applets.create({ name: "uses a secret", definition: slack("{{secrets.TEMP_TOKEN}}") });
    app.secrets.delete("TEMP_TOKEN");
    const runId = app.applets.test(a.id, { body: { title: "x" } }).runId;
    await worker.drain();
    const r = app.repos.runs.get(runId)!;
    expect(r.status).toBe("failed");
    expect(r.error).toMatch(/^action 1 \(slack\): unresolved: secrets\.TEMP_TOKEN \(no secret with this name exists\)/);
  });

  test("#20.7: saving an applet that names a secret that does not exist warns, and still saves", async () => {
    const { app } = setup();
    const api = createApi({ app, applets: app.applets });
    const res = await api.handle(new Request("http://x/api/applets", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "s", definition: slack("{{secrets.NOPE}}") }) }));
    expect(res.status).toBe(201);
    const body = (await res.json()) as { warnings: { path: string; message: string }[] };
    expect(body.warnings).toEqual([{ path: "definition.actions.0.config.webhook_url", message: expect.stringContaining("no secret named NOPE") }]);
    app.secrets.set("NOPE", SLACK_WEBHOOK);
    const again = await api.handle(new Request("http://x/api/applets", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "s", definition: slack("{{secrets.NOPE}}") }) }));
    expect(((await again.json()) as { warnings: unknown[] }).warnings).toEqual([]);
  });
});

describe("#20: the preview renders what a run renders", () => {
  test("#20.3: {{now_local}} resolves in the preview, in the applet's zone, and the picker offers it", async () => {
    const { app } = setup();
    const api = createApi({ app, applets: app.applets });
    const definition = { ...slack(SLACK_WEBHOOK), timezone: "Europe/Berlin", actions: [{ type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "at {{now_local}}" } }] };
    const res = await api.handle(new Request("http://x/api/applets/preview", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ definition, sample: {} }) }));
    const body = (await res.json()) as { actions: { rendered: { text: string }; unresolved: string[] }[] };
    expect(body.actions[0]!.unresolved).toEqual([]);
    // The test clock starts at 2026-03-07T12:00Z: 13:00 in Berlin.
    expect(body.actions[0]!.rendered.text).toBe("at 2026-03-07T13:00:00.000+01:00");
    const { ingredientGroups } = await import("@/lib/ui/format");
    const run = ingredientGroups({ trigger: undefined, secrets: [] }).find((g) => g.label === "Run")!;
    expect(run.options.map((o) => o.value)).toContain("{{now_local}}");
  });
});
