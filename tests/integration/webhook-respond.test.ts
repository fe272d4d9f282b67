import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { http, passthrough } from "msw";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { createIngress } from "@/lib/http/ingress";
import { createTestApp, type TestApp } from "../helpers/db";
import { server as mocks, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/** "respond with data": a webhook may wait (bounded) for its run and answer with its outputs. */
useHttpMocks();
// The test's own requests to the local ingress go out for real; the action's go to the mocks.
beforeEach(() => mocks.use(http.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough())));
let app: TestApp;
let server: Server;
let base: string;

beforeAll(async () => {
  app = createTestApp();
  const ingress = createIngress(app);
  server = createServer((req, res) => {
    if (!ingress(req, res)) {
      res.writeHead(418);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await app.cleanup();
});

const hook = async (trigger: Record<string, unknown>, status = 200) => {
  const a = await app.applets.create({
    name: `respond ${JSON.stringify(trigger)} ${status}`,
    definition: { version: 1, trigger: { type: "webhook", config: trigger }, actions: [{ type: "http", config: { url: `https://status.test/status/${status}`, method: "POST", body: { q: "{{trigger.body.q}}" } } }] },
  });
  return `${base}/api/hooks/${a.id}/${a.webhookToken}`;
};
const post = (url: string, body: unknown) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("respond with data", () => {
  test("the sender gets the configured status and a body rendered from the run's step output and the trigger", async () => {
    const url = await hook({ respond_wait_seconds: 5, respond_status: 201, respond_body: '{"echo":"{{trigger.body.q}}","upstream":"{{steps[0].output.body}}","run":"{{run.status}}"}' });
    const worker = startWorker(app);
    try {
      const res = await post(url, { q: "hello" });
      expect(res.status).toBe(201);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(await res.json()).toEqual({ echo: "hello", upstream: "status 200", run: "succeeded" });
      expect((await app.store.runs.get(res.headers.get("x-run-id")!))!.status).toBe("succeeded");
    } finally {
      await worker.stop();
    }
  });

  test("a run that fails answers 502 with its id and status only; without a body template the run id and status", async () => {
    const failing = await hook({ respond_wait_seconds: 5 }, 404);
    const plain = await hook({ respond_wait_seconds: 5, respond_content_type: "application/json" });
    const worker = startWorker(app);
    try {
      const bad = await post(failing, { q: "x" });
      expect(bad.status).toBe(502);
      const body = (await bad.json()) as { run_id: string; status: string };
      expect(body).toEqual({ run_id: expect.any(String), status: "failed" });
      const ok = await post(plain, { q: "y" });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ status: "succeeded" });
    } finally {
      await worker.stop();
    }
  });

  test("when the wait runs out the sender gets the durable 202, and other webhooks are answered meanwhile", async () => {
    // No worker runs: the run stays queued.
    const waiting = await hook({ respond_wait_seconds: 1.5 });
    const other = await hook({});
    let waitedDone = false;
    const slow = post(waiting, { q: "late" }).then(async (r) => {
      waitedDone = true;
      return { status: r.status, body: (await r.json()) as { run_id: string } };
    });
    const quick = await post(other, { q: "now" });
    expect(quick.status).toBe(202);
    expect(waitedDone).toBe(false);
    const answer = await slow;
    expect(answer.status).toBe(202);
    expect((await app.store.runs.get(answer.body.run_id))!.status).toBe("queued");
  });

  test("the wait is bounded and the settings are checked on save", async () => {
    const save = (config: Record<string, unknown>) => () => app.applets.create({ name: "bad", definition: { version: 1, trigger: { type: "webhook", config }, actions: [{ type: "http", config: { url: "https://status.test/status/200", method: "GET" } }] } });
    await expect(save({ respond_wait_seconds: 11 })).rejects.toThrow(/respond_wait_seconds/);
    await expect(save({ respond_status: 99 })).rejects.toThrow(/respond_status/);
    await expect(save({ respond_content_type: "json" })).rejects.toThrow(/respond_content_type.*media type/);
  });
});
