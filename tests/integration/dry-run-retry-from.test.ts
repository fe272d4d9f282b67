import { existsSync } from "node:fs";
import path from "node:path";
import { http, HttpResponse } from "msw";
import { afterEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import type { DryRunResult } from "@/lib/executor/dry-run";
import { testIdentity } from "../helpers/auth";
import { createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { server, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/**
 * "Test without sending" (the dry run) and "retry from a step", through the API on each engine:
 * a dry run shows every request exactly as built, secrets hidden, and sends, writes and stores
 * nothing; a retry from a step keeps the steps before it and sends only from there.
 */
useHttpMocks();

forEachEngine((engine) => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function boot(env: Record<string, string> = {}) {
    const app = createTestApp({ engine, env });
    cleanups.push(() => app.cleanup());
    const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
    const call = async <T = Record<string, unknown>>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> => {
      const res = await api.handle(new Request(`http://localhost${p}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) }));
      return { status: res.status, body: (await res.json()) as T };
    };
    return { app, call };
  }

  /** Every request that reached the network boundary (msw), whatever its host. */
  function watchNetwork() {
    const seen: string[] = [];
    const listener = ({ request }: { request: Request }) => void seen.push(`${request.method} ${request.url}`);
    server.events.on("request:start", listener);
    cleanups.push(() => server.events.removeListener("request:start", listener));
    return seen;
  }

  const create = (app: TestApp, steps: unknown[]) => app.applets.create({ name: "dry", definition: { version: 2, trigger: { type: "webhook", config: {} }, steps } });

  describe("dry run", () => {
    test("shows each request an action would make, secrets redacted, and nothing leaves the box or is stored", async () => {
      const { app, call } = boot();
      await app.secrets.set("API_TOKEN", "tok-very-secret-123");
      await app.secrets.set("SLACK_HOOK", "https://hooks.slack.com/services/T9/B9/hidden-part");
      const applet = await create(app, [
        {
          id: "order",
          type: "http",
          config: { url: "https://api.shop.test/orders", method: "POST", headers: { Authorization: "Bearer {{secrets.API_TOKEN}}", "X-Source": "whenthen" }, body: { title: "{{trigger.body.title}}", n: "{{trigger.body.n}}" } },
        },
        { id: "big", type: "if", conditions: { all: [{ field: "trigger.body.n", op: "gt", value: 2 }] }, then: [{ id: "tell", type: "slack", config: { webhook_url: "{{secrets.SLACK_HOOK}}", text: "{{trigger.body.title}} x{{trigger.body.n}}" } }] },
        { id: "mail", type: "email", config: { to: "ops@example.com", subject: "Order {{trigger.body.title}}", body_markdown: "**{{trigger.body.n}}** pieces" } },
        { id: "light", type: "mqtt", config: { broker_url: "mqtt://broker.shop.test:1883", username: "shop", password: "{{secrets.API_TOKEN}}", topic: "shop/orders", payload: '{"title":"{{trigger.body.title}}"}', qos: 1 } },
      ]);
      const seen = watchNetwork();
      const res = await call<DryRunResult>("POST", `/api/applets/${applet.id}/dry-run`, { payload: { body: { title: "Lamp", n: 3 } } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const r = res.body;
      expect(r.status).toBe("succeeded");
      expect(seen).toEqual([]);

      const [order, tell, mail] = r.actions;
      expect(order!.step_id).toBe("order");
      expect(order!.requests).toEqual([
        {
          method: "POST",
          url: "https://api.shop.test/orders",
          headers: { authorization: "[redacted]", "x-source": "whenthen", "idempotency-key": "dry-run:order", "content-type": "application/json" },
          body: JSON.stringify({ title: "Lamp", n: 3 }),
        },
      ]);
      expect(tell).toMatchObject({ step_id: "tell", place: "big:then", status: "succeeded" });
      expect(tell!.requests).toHaveLength(1);
      expect(tell!.requests![0]!.body).toBe(JSON.stringify({ text: "Lamp x3" }));
      // The Slack webhook URL is a secret: shown redacted, never as written.
      expect(tell!.requests![0]!.url).not.toContain("hidden-part");
      expect(mail!.record).toMatchObject({ kind: "email", via: "outbox", to: ["ops@example.com"], subject: "Order Lamp" });
      expect(String(mail!.record!.eml)).toContain("Subject: Order Lamp");
      // No broker is connected to: the message it would publish is shown.
      expect(r.actions[3]!.record).toMatchObject({ kind: "mqtt", broker_url: "mqtt://broker.shop.test:1883", topic: "shop/orders", payload: '{"title":"Lamp"}', qos: 1, retain: false });
      expect(JSON.stringify(r)).not.toContain("tok-very-secret-123");
      expect(JSON.stringify(r)).not.toContain("hidden-part");

      // Nothing stored or written: no run, no event, no outbox.
      expect((await app.store.runs.list({})).runs).toEqual([]);
      expect(existsSync(path.join(app.dataDir, "outbox"))).toBe(false);
    });

    test("a wait is shown and not waited for: the steps after it are recorded and nothing is parked", async () => {
      const { app, call } = boot();
      const applet = await create(app, [
        { id: "ask", type: "email", config: { to: "ops@example.com", subject: "Approve?", body_markdown: "[Approve]({{run.approve_url}})" } },
        { id: "approval", type: "wait", kind: "for_approval", message: "Post {{trigger.body.title}}?", timeout: "2h" },
        { id: "pause", type: "wait", kind: "delay", duration: "3d" },
        { id: "post", type: "http", config: { url: "https://api.shop.test/post", method: "POST", body: { title: "{{trigger.body.title}}" } } },
      ]);
      const seen = watchNetwork();
      const r = (await call<DryRunResult>("POST", `/api/applets/${applet.id}/dry-run`, { payload: { body: { title: "Lamp" } } })).body;
      expect(r.status, JSON.stringify(r)).toBe("succeeded");
      expect(seen).toEqual([]);
      const waits = r.steps.filter((s) => s.kind === "wait");
      expect(waits.map((w) => [w.id, w.status, w.decision])).toEqual([
        ["approval", "succeeded", "dry_run"],
        ["pause", "succeeded", "dry_run"],
      ]);
      expect(waits[0]!.why).toMatch(/a dry run does not wait/);
      expect(r.actions.map((a) => a.step_id)).toEqual(["ask", "post"]);
      expect(r.actions[1]!.requests![0]!.body).toBe(JSON.stringify({ title: "Lamp" }));
      expect((await app.store.runs.list({})).runs).toEqual([]);
      expect(await app.store.waits.listWaiting({ limit: 10 })).toEqual([]);
    });

    test("a note action shows the file it would write and writes none", async () => {
      const { app, call } = boot();
      const applet = await create(app, [{ id: "jot", type: "note", config: { folder: "journal/{{trigger.body.day}}", filename: "{{trigger.body.title}}.md", content: "# {{trigger.body.title}}" } }]);
      const r = (await call<DryRunResult>("POST", `/api/applets/${applet.id}/dry-run`, { payload: { body: { title: "Plan", day: "mon" } } })).body;
      const root = app.config.notesRoot;
      expect(r.actions[0]!.record).toMatchObject({ kind: "file", path: path.join(root, "journal", "mon", "Plan.md"), mode: "create", exists: false, content: "# Plan" });
      expect(r.actions[0]!.summary).toBe("would create journal/mon/Plan.md");
      expect(existsSync(path.join(root, "journal"))).toBe(false);
    });

    test("with no event named it uses the latest received one; a bad choice is refused naming the field", async () => {
      const { app, call } = boot();
      const applet = await create(app, [{ id: "jot", type: "note", config: { filename: "{{trigger.body.title}}.md", content: "x" } }]);
      const sample = (await call<DryRunResult>("POST", `/api/applets/${applet.id}/dry-run`, {})).body;
      expect(sample.event.source).toBe("sample");
      const { eventId } = await app.applets.test(applet.id, { body: { title: "Real" } });
      const latest = (await call<DryRunResult>("POST", `/api/applets/${applet.id}/dry-run`, {})).body;
      expect(latest.event.id).toBe(eventId);
      expect(latest.actions[0]!.summary).toBe("would create Real.md");
      const both = await call<{ problems: { path: string }[] }>("POST", `/api/applets/${applet.id}/dry-run`, { sample: true, event_id: eventId });
      expect(both.status).toBe(400);
      expect(both.body.problems[0]!.path).toBe("event_id");
      const unknown = await call<{ problems: { path: string }[] }>("POST", `/api/applets/${applet.id}/dry-run`, { event_id: "nope" });
      expect(unknown.status).toBe(400);
      expect(unknown.body.problems[0]!.path).toBe("event_id");
    });
  });

  describe("retry from a step", () => {
    test("retrying a three-action run from its failed third step sends only the third action again", async () => {
      const { app, call } = boot();
      const received: string[] = [];
      let thirdAnswers = 400;
      server.use(
        http.post("https://sink.test/:name", ({ params }) => {
          const name = String(params.name);
          received.push(name);
          return HttpResponse.json({}, { status: name === "c" ? thirdAnswers : 200 });
        }),
      );
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      const send = (id: string) => ({ id, type: "http", config: { url: `https://sink.test/${id}`, method: "POST", body: { step: id } } });
      const applet = await create(app, [send("a"), send("b"), send("c")]);
      const { runId } = await app.applets.test(applet.id, { body: {} });
      await worker.drain();
      expect((await app.store.runs.get(runId))!.status).toBe("failed");
      expect(received).toEqual(["a", "b", "c"]);

      const notRan = await call<{ error: string; problems: { path: string }[] }>("POST", `/api/runs/${runId}/retry-from`, { step: "zzz" });
      expect(notRan.status).toBe(400);
      expect(notRan.body.error).toContain('step "zzz" did not run in this run; retry from one that did: a, b, c');

      thirdAnswers = 200;
      const r = await call<{ attempt: number; kept: number }>("POST", `/api/runs/${runId}/retry-from`, { step: "c" });
      expect(r.status).toBe(202);
      expect(r.body).toMatchObject({ attempt: 2, kept: 2 });
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(received).toEqual(["a", "b", "c", "c"]);
      expect(run.steps.map((s) => [s.id, s.status, s.attempt])).toEqual([
        ["a", "succeeded", 1],
        ["b", "succeeded", 1],
        ["c", "succeeded", 2],
      ]);

      // A succeeded run is not retried from a step.
      const again = await call<{ error: string }>("POST", `/api/runs/${runId}/retry-from`, { step: "b" });
      expect(again.status).toBe(400);
      expect(again.body.error).toContain("this one is succeeded");
    });

    test("bulk retry by filter takes the matching failed runs only and spaces its batches in time", async () => {
      const { app, call } = boot();
      server.use(http.post("https://sink.test/:name", () => HttpResponse.json({}, { status: 400 })));
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      const applet = await create(app, [{ id: "a", type: "http", config: { url: "https://sink.test/a", method: "POST", body: {} } }]);
      const other = await create(app, [{ id: "a", type: "http", config: { url: "https://sink.test/a", method: "POST", body: {} } }]);
      const mine = [(await app.applets.test(applet.id, { body: {} })).runId, (await app.applets.test(applet.id, { body: {} })).runId];
      const theirs = (await app.applets.test(other.id, { body: {} })).runId;
      await worker.drain();
      await worker.stop();
      const r = await call<{ matched: number; retried: { run_id: string }[]; last_due_at: string }>("POST", "/api/runs/retry-matching", { applet_id: applet.id, error_text: "answered 400", pace_seconds: 5 });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.matched).toBe(2);
      expect(r.body.retried.map((x) => x.run_id).sort()).toEqual([...mine].sort());
      expect((await app.store.runs.get(theirs))!.status).toBe("failed");
      expect(r.body.last_due_at).toBe(app.clock.now().toISOString());
      const bad = await call<{ problems: { path: string }[] }>("POST", "/api/runs/retry-matching", { status: "succeeded" });
      expect(bad.status).toBe(400);
      expect(bad.body.problems[0]!.path).toBe("status");
    });
  });
});
