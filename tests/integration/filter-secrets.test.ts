import { http, HttpResponse } from "msw";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { testIdentity } from "../helpers/auth";
import { createSandbox, type Sandbox } from "@/lib/sandbox";
import { createTransformRunner } from "@/lib/transform";
import { createTestApp, type TestApp } from "../helpers/db";
import { SLACK_WEBHOOK, sentTo, server, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";
import { sqliteOf } from "@/lib/db/store/sqlite";

useHttpMocks();

let sandbox: Sandbox;
beforeAll(() => {
  sandbox = createSandbox({ threads: 2 });
});
afterAll(() => sandbox.close());

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(env: Record<string, string> = {}) {
  const app = createTestApp({ env });
  const worker = startWorker(app, { deps: { sandbox, transform: createTransformRunner(app) } });
  cleanups.push(() => app.cleanup(), () => worker.stop());
  return { app, worker };
}

const slackApplet = async (app: TestApp, extra: Record<string, unknown>, text = "New: {{trigger.body.title}}") =>
  (await app.applets.create({
    name: "to slack",
    definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: SLACK_WEBHOOK, text } }], ...extra },
  }));

describe("AC7: filter code in the executor", () => {
  test("AC7: skip('x') ends the run as skipped with no action step", async () => {
    const { app, worker } = setup();
    const a = await slackApplet(app, { filter: { code: "if (trigger.body.title.includes('draft')) skip('x')" } });
    const skipped = (await app.applets.test(a.id, { body: { title: "a draft post" } })).runId;
    const kept = (await app.applets.test(a.id, { body: { title: "a real post" } })).runId;
    await worker.drain();
    const r = (await app.store.runs.get(skipped))!;
    expect(r.status).toBe("skipped");
    expect(r.error).toBe("skipped: x");
    expect(r.steps.map((s) => s.kind)).toEqual(["filter"]);
    expect((await app.store.runs.get(kept))!.status).toBe("succeeded");
    expect(sentTo("slack")).toHaveLength(1);
  });

  test("AC7: filter code that throws marks the run failed with the message and line, with no retry", async () => {
    const { app, worker } = setup();
    const a = await slackApplet(app, { filter: { code: "const x = 1;\nthrow new Error('no title here');" } });
    const runId = (await app.applets.test(a.id, { body: {} })).runId;
    await worker.drain();
    const r = (await app.store.runs.get(runId))!;
    expect(r.status).toBe("failed");
    expect(r.attempt).toBe(1);
    expect(r.error).toContain("no title here");
    expect(r.error).toContain("line 2");
    expect(sentTo("slack")).toHaveLength(0);
  });

  test("AC7: while (true) {} fails within 2 seconds while a run of another applet completes", async () => {
    const { app, worker } = setup();
    const looping = await slackApplet(app, { filter: { code: "while (true) {}" } });
    const fine = await slackApplet(app, {});
    const loopRun = (await app.applets.test(looping.id, { body: { title: "loop" } })).runId;
    const fineRun = (await app.applets.test(fine.id, { body: { title: "fine" } })).runId;
    const started = Date.now();
    await worker.drain(5_000);
    expect(Date.now() - started).toBeLessThan(2_000);
    const r = (await app.store.runs.get(loopRun))!;
    expect(r.status).toBe("failed");
    expect(r.error).toMatch(/timed out/);
    expect((await app.store.runs.get(fineRun))!.status).toBe("succeeded");
  });

  test("AC7: fetch and require are undefined inside the sandbox, and set('k', 1) shows up as {{vars.k}} in the action", async () => {
    const { app, worker } = setup();
    const a = await slackApplet(app, { filter: { code: "set('k', 1); set('kinds', typeof fetch + '/' + typeof require)" } }, "k={{vars.k}} {{vars.kinds}}");
    const runId = (await app.applets.test(a.id, { body: {} })).runId;
    await worker.drain();
    expect((await app.store.runs.get(runId))!.status).toBe("succeeded");
    expect(JSON.parse(sentTo("slack")[0]!.body).text).toBe("k=1 undefined/undefined");
  });

  test("a retry after a failed action reuses the filter's vars instead of running it again", async () => {
    const { app, worker } = setup();
    let fail = true;
    server.use(http.post(SLACK_WEBHOOK, () => (fail ? new HttpResponse("down", { status: 503 }) : new HttpResponse("ok"))));
    const a = await slackApplet(app, { filter: { code: "console.log('filter ran'); set('n', 7)" } }, "n={{vars.n}}");
    const runId = (await app.applets.test(a.id, { body: {} })).runId;
    await worker.drain();
    fail = false;
    app.clock.advance(30_000);
    await worker.drain();
    const r = (await app.store.runs.get(runId))!;
    expect(r.status).toBe("succeeded");
    expect(r.steps[0]).toMatchObject({ kind: "filter", attempt: 1, logs: ["filter ran"] });
    expect(r.steps[1]).toMatchObject({ kind: "action", attempt: 2, status: "succeeded", input: expect.objectContaining({ text: "n=7" }) });
  });
});

describe("AC12: secrets", () => {
  test("AC12: {{secrets.SLACK_WEBHOOK}} resolves to the real value in the outbound request and is [redacted] in the stored step", async () => {
    const { app, worker } = setup();
    await app.secrets.set("SLACK_WEBHOOK", SLACK_WEBHOOK);
    await app.secrets.set("API_TOKEN", "tok_live_9f8e7d6c5b");
    const a = await app.applets.create({
      name: "secret slack",
      definition: {
        version: 1,
        trigger: { type: "webhook", config: {} },
        actions: [{ type: "slack", config: { webhook_url: "{{secrets.SLACK_WEBHOOK}}", text: "token is {{secrets.API_TOKEN}} for {{trigger.body.title}}" } }],
      },
    });
    const runId = (await app.applets.test(a.id, { body: { title: "x" } })).runId;
    await worker.drain();
    const sent = sentTo("slack");
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe(SLACK_WEBHOOK);
    expect(JSON.parse(sent[0]!.body).text).toBe("token is tok_live_9f8e7d6c5b for x");
    // What is at rest is the subject (here and below): the stored text, not what a store method shows.
    const stored = sqliteOf(app.store).prepare("SELECT steps, error FROM runs WHERE id = ?").get(runId) as { steps: string };
    expect(stored.steps).not.toContain("tok_live_9f8e7d6c5b");
    expect(stored.steps).not.toContain("XXXXXXXX");
    const step = (await app.store.runs.get(runId))!.steps[0]!;
    expect(step.input).toMatchObject({ webhook_url: "[redacted]", text: "token is [redacted] for x" });
  });

  test("a secret echoed back in a failed response or the error is redacted there too", async () => {
    const { app, worker } = setup();
    await app.secrets.set("API_TOKEN", "tok_echo_123456");
    server.use(http.post("https://echo.test/hook", async ({ request }) => new HttpResponse(`bad token ${request.headers.get("authorization")}`, { status: 401 })));
    const a = await app.applets.create({
      name: "echo",
      definition: {
        version: 1,
        trigger: { type: "webhook", config: {} },
        actions: [{ type: "http", config: { url: "https://echo.test/hook", headers: { Authorization: "Bearer {{secrets.API_TOKEN}}" }, body: "{}" } }],
      },
    });
    const runId = (await app.applets.test(a.id, { body: {} })).runId;
    await worker.drain();
    const raw = sqliteOf(app.store).prepare("SELECT steps || coalesce(error, '') AS t FROM runs WHERE id = ?").get(runId) as { t: string };
    expect((await app.store.runs.get(runId))!.status).toBe("failed");
    // The Authorization header is a credential field: its whole value is a secret of the run.
    expect(raw.t).toContain("bad token [redacted]");
    expect(raw.t).not.toContain("tok_echo_123456");
  });

  test("AC12: a secret in an http action URL is redacted in the error also in the form the URL parser re-encoded", async () => {
    const { app, worker } = setup();
    const SECRET = "ab cd|ef-77x";
    await app.secrets.set("PATH_TOKEN", SECRET);
    server.use(http.post("https://api.example.test/hooks/:token", () => HttpResponse.error()));
    const a = await app.applets.create({
      name: "encoded",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://api.example.test/hooks/{{secrets.PATH_TOKEN}}", body: "{}" } }] },
      enabled: true,
    });
    const runId = (await app.applets.test(a.id, { body: {} })).runId;
    await worker.drain();
    const raw = sqliteOf(app.store).prepare("SELECT steps || coalesce(error, '') AS t FROM runs WHERE id = ?").get(runId) as { t: string };
    expect(raw.t).toContain("/hooks/[redacted]");
    expect(raw.t).not.toContain("ab%20cd");
    expect(raw.t).not.toContain(SECRET);
  });

  test("secrets are stored encrypted, bound to their name, and listed without values", async () => {
    const { app } = setup();
    await app.secrets.set("MY_KEY", "value-1");
    const row = sqliteOf(app.store).prepare("SELECT value_encrypted FROM secrets WHERE name = 'MY_KEY'").get() as { value_encrypted: string };
    expect(row.value_encrypted).not.toContain("value-1");
    expect(await app.secrets.resolve("MY_KEY")).toBe("value-1");
    // A ciphertext moved to another name fails authentication instead of decrypting.
    (await app.secrets.set("OTHER", "x"));
    sqliteOf(app.store).prepare("UPDATE secrets SET value_encrypted = ? WHERE name = 'OTHER'").run(row.value_encrypted);
    await expect(app.secrets.resolve("OTHER")).rejects.toThrow(/failed authentication/);
    await expect(app.secrets.set("lower", "x")).rejects.toThrow(/A-Z0-9_/);
    expect((await app.secrets.list()).map((s) => s.name)).toEqual(["MY_KEY", "OTHER"]);
  });
});

describe("AI transform", () => {
  const completions = "https://openrouter.ai/api/v1/chat/completions";

  test("the model's answer lands in {{ai.<output>}}, with temperature 0 and the rendered prompt", async () => {
    const { app, worker } = setup({ OPENROUTER_API_KEY: "or-key" });
    let request: Record<string, unknown> = {};
    server.use(
      http.post(completions, async ({ request: r }) => {
        request = (await r.json()) as Record<string, unknown>;
        return HttpResponse.json({ choices: [{ message: { content: "A short summary." } }] });
      }),
    );
    const a = await slackApplet(app, { transform: { model: "openai/gpt-4o-mini", prompt: "Summarize: {{trigger.body.title}}", output: "summary" } }, "AI: {{ai.summary}}");
    const runId = (await app.applets.test(a.id, { body: { title: "Long text" } })).runId;
    await worker.drain();
    expect((await app.store.runs.get(runId))!.status).toBe("succeeded");
    expect(request).toMatchObject({ model: "openai/gpt-4o-mini", temperature: 0, messages: [{ role: "user", content: "Summarize: Long text" }] });
    expect(JSON.parse(sentTo("slack")[0]!.body).text).toBe("AI: A short summary.");
  });

  test("JSON mode parses the answer; an answer that is not JSON is kept as text with a warning", async () => {
    const { app, worker } = setup({ OPENROUTER_API_KEY: "or-key" });
    let answer = '```json\n{"label": "invoice"}\n```';
    server.use(http.post(completions, () => HttpResponse.json({ choices: [{ message: { content: answer } }] })));
    const a = await slackApplet(app, { transform: { model: "m", prompt: "Classify {{trigger.body.title}}", output: "c", json: true } }, "label={{ai.c.label}}");
    const first = (await app.applets.test(a.id, { body: { title: "x" } })).runId;
    await worker.drain();
    expect((await app.store.runs.get(first))!.status).toBe("succeeded");
    expect(JSON.parse(sentTo("slack")[0]!.body).text).toBe("label=invoice");
    answer = "not json at all";
    const second = (await app.applets.test(a.id, { body: { title: "y" } })).runId;
    await worker.drain();
    const steps = (await app.store.runs.get(second))!.steps;
    expect(steps[0]!.warnings.join()).toMatch(/not answer valid JSON/);
    expect(steps[0]!.output).toEqual({ value: "not json at all" });
  });

  test("a 500 is retried once before the run's own retry; without a key the step is skipped with a warning", async () => {
    const { app, worker } = setup({ OPENROUTER_API_KEY: "or-key" });
    let calls = 0;
    server.use(http.post(completions, () => (++calls === 1 ? new HttpResponse("busy", { status: 502 }) : HttpResponse.json({ choices: [{ message: { content: "ok" } }] }))));
    const a = await slackApplet(app, { transform: { model: "m", prompt: "p", output: "o" } }, "{{ai.o}}");
    const runId = (await app.applets.test(a.id, { body: {} })).runId;
    await worker.drain();
    expect(calls).toBe(2);
    expect((await app.store.runs.get(runId))!.status).toBe("succeeded");

    const noKey = setup();
    const b = await slackApplet(noKey.app, { transform: { model: "m", prompt: "p", output: "o" } }, "plain text");
    const r2 = (await noKey.app.applets.test(b.id, { body: {} })).runId;
    await noKey.worker.drain();
    const run = (await noKey.app.store.runs.get(r2))!;
    expect(run.status).toBe("succeeded");
    expect(run.steps[0]).toMatchObject({ kind: "transform", status: "skipped", warnings: ["transform skipped: OPENROUTER_API_KEY is not set"] });
  });
});

describe("AC12: a secret in the transform prompt", () => {
  test("AC12: a provider error that echoes the prompt is stored with the secret [redacted]", async () => {
    const { app, worker } = setup({ OPENROUTER_API_KEY: "or-key" });
    await app.secrets.set("CRM_TOKEN", "crm_live_55aa77bb");
    server.use(
      http.post("https://openrouter.ai/api/v1/chat/completions", async ({ request }) => {
        const body = (await request.json()) as { messages: { content: string }[] };
        return HttpResponse.json({ error: { message: `prompt rejected: ${body.messages[0]!.content}` } }, { status: 400 });
      }),
    );
    const a = await slackApplet(app, { transform: { model: "m", prompt: "Look up {{trigger.body.title}} with token {{secrets.CRM_TOKEN}}", output: "o" } }, "{{ai.o}}");
    const runId = (await app.applets.test(a.id, { body: { title: "x" } })).runId;
    await worker.drain();
    const run = (await app.store.runs.get(runId))!;
    expect(run.status).toBe("failed");
    expect(run.error).toContain("with token [redacted]");
    const raw = sqliteOf(app.store).prepare("SELECT steps || coalesce(error, '') AS t FROM runs WHERE id = ?").get(runId) as { t: string };
    expect(raw.t).not.toContain("crm_live_55aa77bb");
  });
});

describe("run-debugging endpoints", () => {
  test("preview renders every action against a sample with unresolved paths, and saves nothing", async () => {
    const { app } = setup();
    await app.secrets.set("SLACK_WEBHOOK", SLACK_WEBHOOK);
    const api = createApi({ app, applets: app.applets, sandbox, auth: testIdentity(app) });
    const definition = {
      version: 1,
      trigger: { type: "webhook", config: {} },
      actions: [{ type: "slack", config: { webhook_url: "{{secrets.SLACK_WEBHOOK}}", text: "{{trigger.body.title | upper}} by {{trigger.body.author}}" } }],
    };
    const res = await api.handle(new Request("http://localhost/api/applets/preview", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ definition, sample: { body: { title: "hello" } } }) }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { actions: { rendered: { text: string; webhook_url: string }; unresolved: string[] }[] };
    expect(body.actions[0]!.rendered.text).toBe("HELLO by ");
    expect(body.actions[0]!.rendered.webhook_url).toBe("[secret SLACK_WEBHOOK]");
    expect(body.actions[0]!.unresolved).toEqual(["trigger.body.author"]);
    expect(await app.store.applets.list()).toHaveLength(0);
  });

  test("filter-test runs the sandbox against a sample; retry requeues the same run; replay makes a new one", async () => {
    const { app, worker } = setup();
    const api = createApi({ app, applets: app.applets, sandbox, auth: testIdentity(app) });
    const ft = await api.handle(new Request("http://localhost/api/applets/filter-test", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ code: "console.log(trigger.title); if (trigger.title === 'draft') skip('drafts wait')", sample: { title: "draft" } }) }));
    expect(await ft.json()).toMatchObject({ logs: ["draft"], skipped: true, reason: "drafts wait", error: null });

    server.use(http.post(SLACK_WEBHOOK, () => new HttpResponse("invalid_token", { status: 403 })));
    const a = await slackApplet(app, {});
    const runId = (await app.applets.test(a.id, { body: { title: "t" } })).runId;
    await worker.drain();
    expect((await app.store.runs.get(runId))!.status).toBe("failed");
    const retry = await api.handle(new Request(`http://localhost/api/runs/${runId}/retry`, { method: "POST" }));
    expect(retry.status).toBe(202);
    expect(await app.store.runs.get(runId)).toMatchObject({ status: "queued", attempt: 2 });
    await worker.drain();
    const again = await api.handle(new Request(`http://localhost/api/runs/${runId}/retry`, { method: "POST" }));
    expect(again.status).toBe(202);
    const replay = await api.handle(new Request(`http://localhost/api/runs/${runId}/replay`, { method: "POST" }));
    const { run_id } = (await replay.json()) as { run_id: string };
    expect(run_id).not.toBe(runId);
    expect(await app.store.runs.get(run_id)).toMatchObject({ status: "queued", attempt: 1, steps: [] });
    const notRetryable = await api.handle(new Request(`http://localhost/api/runs/${run_id}/retry`, { method: "POST" }));
    expect(notRetryable.status).toBe(400);
  });
});
