import { createHmac } from "node:crypto";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createIngress } from "@/lib/http/ingress";
import { allEventsOf, createTestApp, eventsOf, runsOf, webhookToHttp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";

forEachEngine((engine) => {
  let app: TestApp;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    app = createTestApp({ engine });
    const ingress = createIngress(app);
    server = createServer((req, res) => {
      if (!ingress(req, res)) {
        res.writeHead(418);
        res.end("not the ingress");
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    void app.cleanup();
  });

  const count = async (table: "events" | "runs") => (table === "runs" ? await runsOf(app.store) : await allEventsOf(app.store)).length;
  const hookUrl = (a: { id: string; webhookToken: string }) => `${base}/api/hooks/${a.id}/${a.webhookToken}`;
  const newApplet = async (config: Record<string, unknown> = {}, name = "hook") =>
    (await app.applets.create({ name, definition: { ...webhookToHttp("https://status.test/status/200"), trigger: { type: "webhook", config } } }));

  describe("AC1: webhook trigger", () => {
    test("AC1: POST with a JSON body returns 202 with a run id, and the event payload has body, headers and query", async () => {
      const applet = await newApplet();
      const res = await fetch(`${hookUrl(applet)}?source=shop&tag=a&tag=b`, {
        method: "POST",
        headers: { "content-type": "application/json", "X-Custom-Header": "Yes", authorization: "Bearer secret", cookie: "sid=1" },
        body: JSON.stringify({ title: "Order paid", amount: 12.5 }),
      });
      expect(res.status).toBe(202);
      const body = (await res.json()) as { run_id: string; event_id: string };
      expect(body.run_id).toMatch(/^[0-9a-f-]{36}$/);
      const run = (await app.store.runs.get(body.run_id))!;
      expect(run.status).toBe("queued");
      const event = (await app.store.runs.event(body.event_id))!;
      expect(event.source).toBe("webhook");
      expect(event.payload.body).toEqual({ title: "Order paid", amount: 12.5 });
      expect(event.payload.query).toEqual({ source: "shop", tag: ["a", "b"] });
      const headers = event.payload.headers as Record<string, string>;
      expect(headers["x-custom-header"]).toBe("Yes");
      expect(headers).not.toHaveProperty("authorization");
      expect(headers).not.toHaveProperty("cookie");
      expect(event.payload.method).toBe("POST");
    });

    test("AC1: a wrong token or an unknown applet returns 404 with an empty body and inserts nothing", async () => {
      const applet = await newApplet();
      const before = [await count("events"), await count("runs")];
      for (const url of [
        `${base}/api/hooks/${applet.id}/wrong-token`,
        `${base}/api/hooks/no-such-applet/${applet.webhookToken}`,
        `${base}/api/hooks/${applet.id}`,
        `${base}/api/hooks/${applet.id}/%E0%A4%A`,
      ]) {
        const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
        expect(res.status).toBe(404);
        expect(await res.text()).toBe("");
      }
      expect([await count("events"), await count("runs")]).toEqual(before);
    });

    test("AC1: the token of an applet whose trigger is not a webhook is answered like an unknown hook: 404, empty body, nothing stored", async () => {
      const schedule = await app.applets.create({
        name: "nightly",
        definition: { ...webhookToHttp("https://status.test/status/200"), trigger: { type: "schedule", config: { cron: "0 9 * * *", timezone: "UTC" } } },
      });
      const pausedSchedule = await app.applets.create({
        name: "paused nightly",
        enabled: false,
        definition: { ...webhookToHttp("https://status.test/status/200"), trigger: { type: "schedule", config: { cron: "0 9 * * *", timezone: "UTC" } } },
      });
      // Was a webhook, then edited into a schedule: its old URL stops working.
      const converted = await newApplet();
      await app.applets.update(converted.id, { definition: { ...webhookToHttp("https://status.test/status/200"), trigger: { type: "schedule", config: { cron: "0 9 * * *", timezone: "UTC" } } } });
      const before = [await count("events"), await count("runs")];
      for (const a of [schedule, pausedSchedule, converted]) {
        for (const method of ["POST", "GET"]) {
          const res = await fetch(hookUrl(a), method === "POST" ? { method, headers: { "content-type": "application/json" }, body: "{}" } : { method });
          expect(res.status).toBe(404);
          expect(await res.text()).toBe("");
        }
      }
      expect([await count("events"), await count("runs")]).toEqual(before);
    });

    test("AC1: a disabled applet returns 200 with queued: false and creates nothing", async () => {
      const applet = await newApplet();
      await app.applets.setEnabled(applet.id, false);
      const before = await count("runs");
      const res = await fetch(hookUrl(applet), { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ queued: false, reason: "disabled" });
      expect(await count("runs")).toBe(before);
    });

    test("AC1: GET with query parameters fires the applet with the query as its body", async () => {
      const applet = await newApplet();
      const res = await fetch(`${hookUrl(applet)}?title=from+a+GET`);
      expect(res.status).toBe(202);
      const { event_id } = (await res.json()) as { event_id: string };
      const event = (await app.store.runs.event(event_id))!;
      expect(event.payload.body).toEqual({ title: "from a GET" });
      expect(event.payload.method).toBe("GET");
    });

    test.each([
      ["application/x-www-form-urlencoded", "title=Hello+there&n=2", { title: "Hello there", n: "2" }],
      ["text/plain", "just text", { raw: "just text" }],
      ["application/json", "{not json", { raw: "{not json", parse_error: "invalid JSON" }],
      [
        "multipart/form-data; boundary=XyZ",
        '--XyZ\r\nContent-Disposition: form-data; name="title"\r\n\r\nA title\r\n--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nabc\r\n--XyZ--\r\n',
        { title: "A title", file: { filename: "a.txt", size: 3 } },
      ],
    ])("AC1: body of type %s is parsed and nothing is lost", async (contentType, raw, expected) => {
      const applet = await newApplet();
      const res = await fetch(hookUrl(applet), { method: "POST", headers: { "content-type": contentType }, body: raw });
      expect(res.status).toBe(202);
      const { event_id } = (await res.json()) as { event_id: string };
      expect((await app.store.runs.event(event_id))!.payload.body).toEqual(expected);
    });

    test("AC1: with secret_header and hmac_secret, a correct HMAC-SHA256 is accepted and a wrong one gets 401", async () => {
      await app.secrets.set("HOOK_SECRET", "s3cr3t-value");
      const applet = await newApplet({ secret_header: "X-Hub-Signature-256", hmac_secret: "{{secrets.HOOK_SECRET}}" });
      const raw = JSON.stringify({ title: "signed" });
      const sig = "sha256=" + createHmac("sha256", "s3cr3t-value").update(raw).digest("hex");
      const ok = await fetch(hookUrl(applet), { method: "POST", headers: { "content-type": "application/json", "x-hub-signature-256": sig }, body: raw });
      expect(ok.status).toBe(202);
      const before = await count("runs");
      const bad = await fetch(hookUrl(applet), { method: "POST", headers: { "content-type": "application/json", "x-hub-signature-256": sig.replace(/.$/, "0") }, body: raw + " " });
      expect(bad.status).toBe(401);
      const missing = await fetch(hookUrl(applet), { method: "POST", headers: { "content-type": "application/json" }, body: raw });
      expect(missing.status).toBe(401);
      expect(await count("runs")).toBe(before);
    });

    test("AC1: a body over 1 MB is refused with 413 before parsing, by Content-Length or by counting a chunked stream", async () => {
      const applet = await newApplet();
      const before = await count("runs");
      const big = "x".repeat(1024 * 1024 + 1);
      const res = await fetch(hookUrl(applet), { method: "POST", headers: { "content-type": "text/plain" }, body: big });
      expect(res.status).toBe(413);
      const chunked = await new Promise<number>((resolve, reject) => {
        const req = request(hookUrl(applet), { method: "POST", headers: { "content-type": "text/plain", "transfer-encoding": "chunked" } }, (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        });
        req.on("error", reject);
        for (let i = 0; i < 20; i++) req.write("y".repeat(64 * 1024));
        req.end();
      });
      expect(chunked).toBe(413);
      const exactly = await fetch(hookUrl(applet), { method: "POST", headers: { "content-type": "text/plain" }, body: "z".repeat(1024 * 1024) });
      expect(exactly.status).toBe(202);
      expect(await count("runs")).toBe(before + 1);
    });

    test("AC1: a payload over 64 KB is stored cut, with truncated: true", async () => {
      const applet = await newApplet();
      const res = await fetch(hookUrl(applet), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "big", text: "a".repeat(200_000) }) });
      const { event_id } = (await res.json()) as { event_id: string };
      const event = (await app.store.runs.event(event_id))!;
      expect(event.payload.truncated).toBe(true);
      expect(Buffer.byteLength(JSON.stringify(event.payload))).toBeLessThanOrEqual(64 * 1024 + 32);
      expect((event.payload.body as { title: string }).title).toBe("big");
    });

    test("AC1: concurrent webhooks are committed together and each gets its own run", async () => {
      const applet = await newApplet();
      const before = await count("runs");
      const responses = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          fetch(hookUrl(applet), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: `n${i}` }) }).then(async (r) => ({ status: r.status, body: (await r.json()) as { run_id: string } })),
        ),
      );
      expect(responses.every((r) => r.status === 202)).toBe(true);
      expect(new Set(responses.map((r) => r.body.run_id)).size).toBe(200);
      expect(await count("runs")).toBe(before + 200);
      // Every acknowledged run is in the database.
      for (const r of responses) expect((await app.store.runs.get(r.body.run_id))?.status).toBe("queued");
    });

    test("group commit: a row that fails (its applet was just deleted) fails alone", async () => {
      const keep = await newApplet({}, "kept");
      const { createIngestBatcher } = await import("@/lib/queue/ingest");
      const batched = createIngestBatcher(app);
      const ok = batched({ appletId: keep.id, source: "webhook", dedupeKey: null, payload: { body: {} }, maxAttempts: 5 });
      const gone = batched({ appletId: "deleted-applet", source: "webhook", dedupeKey: null, payload: { body: {} }, maxAttempts: 5 });
      const [a, b] = await Promise.allSettled([ok, gone]);
      expect(a.status).toBe("fulfilled");
      expect(b.status).toBe("rejected");
      expect((await app.store.runs.get((a as PromiseFulfilledResult<{ runId: string }>).value.runId))?.status).toBe("queued");
      // The batch was redone row by row after the failure: the kept row is stored once, not twice.
      expect(await eventsOf(app.store, keep.id)).toHaveLength(1);
      expect(await runsOf(app.store, keep.id)).toHaveLength(1);
    });

    // Since then the answer also says what is wrong (`problems`).
    test("health answers 503 until the worker heartbeat is fresh, then 200 with worker_seen_at", async () => {
      const stale = await fetch(`${base}/api/health`);
      expect(stale.status).toBe(503);
      expect(await stale.json()).toEqual({ ok: false, worker_seen_at: null, problems: ["worker: no heartbeat yet; the worker is not running"] });
      await app.store.jobLocks.heartbeat("worker_heartbeat", app.clock.now());
      const fresh = await fetch(`${base}/api/health`);
      expect(fresh.status).toBe(200);
      expect(await fresh.json()).toEqual({ ok: true, worker_seen_at: app.clock.now().toISOString(), problems: [] });
      app.clock.advance(61_000);
      const late = await fetch(`${base}/api/health`);
      expect(late.status).toBe(503);
      expect(((await late.json()) as { problems: string[] }).problems).toEqual(["worker: no heartbeat for 61 s; it is not running, or cannot write to the database"]);
    });

    test("requests that are not the ingress's are handed on", async () => {
      expect((await fetch(`${base}/api/applets`)).status).toBe(418);
      expect((await fetch(`${base}/`)).status).toBe(418);
    });
  });
});
