import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { delay, http, HttpResponse } from "msw";
import { afterEach, describe, expect, test, vi } from "vitest";
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { createTestApp, testFetch, webhookToHttp, type TestApp } from "../helpers/db";
import { sentTo, server, useHttpMocks } from "../helpers/http";
import { forEachEngine } from "../helpers/engines";
import { startWorker } from "../helpers/worker";

useHttpMocks();

forEachEngine((engine) => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function setup(): TestApp {
    const app = createTestApp({ engine });
    cleanups.push(() => app.cleanup());
    return app;
  }

  async function fire(app: TestApp, appletId: string, body: Record<string, unknown> = { title: "t" }): Promise<string> {
    return (await app.applets.test(appletId, { body })).runId;
  }

  describe("AC8: http action retries", () => {
    test("AC8: a 500 is retried with next_attempt_at offsets of 30s, 2m, 10m, 1h and the run is dead after attempt 5 fails", async () => {
      const app = setup();
      const applet = await app.applets.create({ name: "flaky", definition: webhookToHttp("https://status.test/status/500") });
      const runId = await fire(app, applet.id);
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      const offsets: number[] = [];
      for (let attempt = 1; attempt <= 4; attempt++) {
        await worker.drain();
        const run = (await app.store.runs.get(runId))!;
        expect(run.status).toBe("queued");
        expect(run.attempt).toBe(attempt + 1);
        offsets.push(Date.parse(run.nextAttemptAt!) - app.clock.now().getTime());
        // Not due yet: the worker must leave it alone.
        await worker.drain();
        expect((await app.store.runs.get(runId))!.attempt).toBe(attempt + 1);
        app.clock.set(run.nextAttemptAt!);
      }
      expect(offsets).toEqual([30_000, 120_000, 600_000, 3_600_000]);
      await worker.drain();
      const dead = (await app.store.runs.get(runId))!;
      expect(dead.status).toBe("dead");
      expect(dead.attempt).toBe(5);
      expect(dead.nextAttemptAt).toBeNull();
      expect(dead.error).toContain("answered 500");
      expect(sentTo("status")).toHaveLength(5);
      // Each attempt carries the same idempotency key.
      expect(new Set(sentTo("status").map((r) => r.headers["idempotency-key"])).size).toBe(1);
    });

    test("AC8: a 400 fails the run on attempt 1 with no next_attempt_at and no retry", async () => {
      const app = setup();
      const applet = await app.applets.create({ name: "bad request", definition: webhookToHttp("https://status.test/status/400") });
      const runId = await fire(app, applet.id);
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("failed");
      expect(run.attempt).toBe(1);
      expect(run.nextAttemptAt).toBeNull();
      expect(run.steps[0]).toMatchObject({ kind: "action", name: "http", status: "failed", attempt: 1 });
      expect((run.steps[0]!.output as { status: number }).status).toBe(400);
      expect(sentTo("status")).toHaveLength(1);
    });

    test("a 429 with Retry-After waits at least as long as the provider asked", async () => {
      const app = setup();
      const applet = await app.applets.create({ name: "rate limited", definition: webhookToHttp("https://status.test/status/429?retry_after=300") });
      const runId = await fire(app, applet.id);
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("queued");
      expect(Date.parse(run.nextAttemptAt!) - app.clock.now().getTime()).toBe(300_000);
    });

    test("a retry does not repeat an action that already succeeded in an earlier attempt", async () => {
      const app = setup();
      let failSecond = true;
      server.use(
        http.post("https://b.test/second", () => (failSecond ? new HttpResponse("down", { status: 503 }) : HttpResponse.json({ ok: true }))),
      );
      const definition = {
        version: 1,
        trigger: { type: "webhook", config: {} },
        actions: [
          { type: "http", config: { url: "https://status.test/status/200", method: "POST", body: "first" } },
          { type: "http", config: { url: "https://b.test/second", method: "POST", body: "second" } },
        ],
      };
      const applet = await app.applets.create({ name: "two actions", definition });
      const runId = await fire(app, applet.id);
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      expect((await app.store.runs.get(runId))!.status).toBe("queued");
      failSecond = false;
      app.clock.advance(30_000);
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(sentTo("status")).toHaveLength(1);
      expect(run.steps.map((s) => [s.index, s.status, s.attempt])).toEqual([
        [0, "succeeded", 1],
        [1, "succeeded", 2],
      ]);
      expect(run.steps[1]!.previous_errors).toEqual([expect.objectContaining({ attempt: 1, error: expect.stringContaining("503") })]);
    });
  });

  describe("template context in the executor", () => {
    test("now, now_local (in the applet's zone), applet, run and event ids are available to actions", async () => {
      const app = setup();
      const applet = await app.applets.create({
        name: "clock",
        definition: {
          version: 1,
          timezone: "Europe/Berlin",
          trigger: { type: "webhook", config: {} },
          actions: [{ type: "http", config: { url: "https://status.test/status/200", body: "{{now}}|{{now_local}}|{{applet.name}}|{{run.attempt}}|{{trigger.body.title | date:'HH:mm'}}" } }],
        },
      });
      app.clock.set("2026-03-07T12:00:00.000Z");
      await fire(app, applet.id, { title: "2026-03-07T18:30:00Z" });
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      expect(sentTo("status")[0]!.body).toBe("2026-03-07T12:00:00.000Z|2026-03-07T13:00:00.000+01:00|clock|1|19:30");
    });

    test("the stored secrets are read only by a run whose definition can name one, and then resolve", async () => {
      const app = setup();
      await app.secrets.set("TOKEN", "s3cret-value");
      const plain = await app.applets.create({ name: "plain", definition: webhookToHttp("https://status.test/status/200") });
      const signed = await app.applets.create({
        name: "signed",
        definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://status.test/status/201", headers: { authorization: "Bearer {{secrets.TOKEN}}" } } }] },
      });
      const lookups = vi.spyOn(app.secrets, "lookup");
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await fire(app, plain.id);
      await worker.drain();
      expect(lookups).not.toHaveBeenCalled();
      await fire(app, signed.id);
      await worker.drain();
      expect(lookups).toHaveBeenCalledTimes(1);
      expect(sentTo("status").map((r) => r.headers.authorization)).toEqual([undefined, "Bearer s3cret-value"]);
    });
  });

  describe("AC9: ordering", () => {
    test("AC9: two runs of one applet never overlap; runs of two applets overlap when each action takes 500 ms", async () => {
      // Real time here: the assertion is about wall-clock overlap (the one test allowed to wait, capped well under 2 s).
      const dir = mkdtempSync(path.join(os.tmpdir(), "whenthen-ac9-"));
      const app = createApp({ env: { DATA_DIR: dir }, log: silentLogger, http: testFetch(), store: engine.open(dir) });
      cleanups.push(() => {
        void app.close();
        rmSync(dir, { recursive: true, force: true });
      });
      server.use(
        http.post("https://slow.test/work", async () => {
          await delay(500);
          return HttpResponse.json({ ok: true });
        }),
      );
      const applets = createAppletService(app);
      const a = await applets.create({ name: "A", definition: webhookToHttp("https://slow.test/work") });
      const b = await applets.create({ name: "B", definition: webhookToHttp("https://slow.test/work") });
      const a1 = (await applets.test(a.id, { body: { n: 1 } })).runId;
      const a2 = (await applets.test(a.id, { body: { n: 2 } })).runId;
      const b1 = (await applets.test(b.id, { body: { n: 1 } })).runId;
      const worker = startWorker(app, { concurrency: 4 });
      cleanups.push(() => worker.stop());
      await worker.drain(5_000);
      const [ra1, ra2, rb1] = await Promise.all([a1, a2, b1].map(async (id) => (await app.store.runs.get(id))!));
      for (const r of [ra1, ra2, rb1]) expect(r!.status).toBe("succeeded");
      // Same applet: the second starts after the first finished, in order.
      expect(Date.parse(ra2!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(ra1!.finishedAt!));
      // Different applets: B's run ran while A's first run was in flight.
      expect(Date.parse(rb1!.startedAt!)).toBeLessThan(Date.parse(ra1!.finishedAt!));
      expect(Date.parse(ra1!.startedAt!)).toBeLessThan(Date.parse(rb1!.finishedAt!));
    });
  });

  describe("AC17: crash safety (stale locks)", () => {
    test("AC17: a run left running with locked_at 11 minutes old is requeued with the same attempt and completes once", async () => {
      const app = setup();
      const applet = await app.applets.create({ name: "crashy", definition: webhookToHttp("https://status.test/status/200") });
      const runId = await fire(app, applet.id);
      // A worker claims the run and dies mid-step.
      const orphan = (await app.store.runs.claim("dead-worker/0", app.clock.now()))!;
      expect(orphan.id).toBe(runId);
      app.clock.advance(11 * 60_000);
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(run.attempt).toBe(1);
      expect(sentTo("status")).toHaveLength(1);
      // The dead worker's late settle is fenced off by the claim token.
      expect(await app.store.runs.finish(orphan, "failed", [], "late", app.clock.now())).toBe(false);
      expect((await app.store.runs.get(runId))!.status).toBe("succeeded");
      expect((await app.store.applets.get(applet.id))!.runCount).toBe(1);
    });

    // Since then a run is judged by its worker's lease first: this one's worker is alive (it renewed
    // its lease a moment ago), so only the 10-minute stuck bound could take it back.
    test("AC17: a run locked 9 minutes ago by a worker whose lease is fresh is left alone", async () => {
      const app = setup();
      const applet = await app.applets.create({ name: "slow", definition: webhookToHttp("https://status.test/status/200") });
      const runId = await fire(app, applet.id);
      await app.store.runs.claim("other-worker", app.clock.now());
      app.clock.advance(9 * 60_000);
      await app.store.workers.heartbeat({ id: "other-worker", hostname: "elsewhere", pid: 1, now: app.clock.now(), leaseMs: 30_000, fault: null });
      expect(await app.store.runs.recoverStale({ now: app.clock.now(), stuckBefore: new Date(app.clock.now().getTime() - 10 * 60_000) })).toEqual([]);
      expect((await app.store.runs.get(runId))!.status).toBe("running");
    });
  });

  describe("run counters and manual retry/replay", () => {
    test("a finished run updates run_count and last_fired_at; Retry requeues a failed run with attempt + 1; Replay makes a fresh run", async () => {
      const app = setup();
      const applet = await app.applets.create({ name: "counted", definition: webhookToHttp("https://status.test/status/404") });
      const runId = await fire(app, applet.id);
      const first = startWorker(app);
      cleanups.push(() => first.stop());
      await first.drain();
      expect((await app.store.runs.get(runId))!.status).toBe("failed");
      const a = (await app.store.applets.get(applet.id))!;
      expect(a.runCount).toBe(1);
      expect(a.lastFiredAt).toBe(app.clock.now().toISOString());
      // No worker while the requeued run is looked at: on PostgreSQL a polling one claims it
      // between the two queries (the store's I/O yields to its timer).
      await first.stop();
      expect(await app.store.runs.retry(runId, app.clock.now())).toBe(true);
      expect(await app.store.runs.get(runId)).toMatchObject({ status: "queued", attempt: 2 });
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      expect(await app.store.runs.get(runId)).toMatchObject({ status: "failed", attempt: 2 });
      const replayId = (await app.store.runs.replay(runId, app.clock.now()))!;
      await worker.drain();
      expect(await app.store.runs.get(replayId)).toMatchObject({ status: "failed", attempt: 1, eventId: (await app.store.runs.get(runId))!.eventId });
      expect(sentTo("status")).toHaveLength(3);
    });

    test("Replay sends new idempotency keys and Message-IDs; the original run's retries and a replay's own retries keep theirs", async () => {
      const app = setup();
      let fail = true;
      const keys: string[] = [];
      server.use(
        http.post("https://dedupe.test/in", ({ request }) => {
          keys.push(request.headers.get("idempotency-key")!);
          return fail ? new HttpResponse("down", { status: 503 }) : HttpResponse.json({ ok: true });
        }),
      );
      const applet = await app.applets.create({
        name: "replayed",
        definition: {
          ...webhookToHttp("https://dedupe.test/in"),
          actions: [
            { type: "email", config: { to: "me@example.com", subject: "Order {{trigger.body.title}}" } },
            { type: "http", config: { url: "https://dedupe.test/in", body: "{}" } },
          ],
        },
      });
      const runId = await fire(app, applet.id);
      const eventId = (await app.store.runs.get(runId))!.eventId;
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      const messageIdOf = async (id: string) => ((await app.store.runs.get(id))!.steps[0]!.output as { message_id: string }).message_id;

      await worker.drain(); // attempt 1: email sent, http 503
      fail = false;
      app.clock.advance(30_000);
      await worker.drain(); // attempt 2: http succeeds, email not repeated
      expect((await app.store.runs.get(runId))!.status).toBe("succeeded");
      expect(keys).toEqual([`${eventId}:1`, `${eventId}:1`]);
      const originalMessageId = await messageIdOf(runId);

      // Replay after a minute (the usual case), and a second replay in the same millisecond as the first.
      app.clock.advance(60_000);
      fail = true;
      const replayId = (await app.store.runs.replay(runId, app.clock.now()))!;
      const sameMsReplayId = (await app.store.runs.replay(runId, app.clock.now()))!;
      await worker.drain();
      fail = false;
      app.clock.advance(30_000);
      await worker.drain();
      expect((await app.store.runs.get(replayId))!.status).toBe("succeeded");
      expect((await app.store.runs.get(sameMsReplayId))!.status).toBe("succeeded");
      const replayKeys = keys.slice(2);
      expect(replayKeys.filter((k) => k === `${eventId}:1:${replayId}`)).toHaveLength(2);
      expect(replayKeys.filter((k) => k === `${eventId}:1:${sameMsReplayId}`)).toHaveLength(2);
      expect(replayKeys).toHaveLength(4);
      expect(new Set([originalMessageId, await messageIdOf(replayId), await messageIdOf(sameMsReplayId)]).size).toBe(3);
      expect(await messageIdOf(replayId)).toContain(replayId);

    });
  });

  describe("limits on what a run stores", () => {
    test("an action's output over 64 KB is stored cut with truncated: true, and the run still succeeds", async () => {
      const app = setup();
      server.use(http.post("https://big.test/out", () => HttpResponse.json({ items: Array.from({ length: 4000 }, (_, i) => ({ i, text: "x".repeat(40) })) })));
      const applet = await app.applets.create({ name: "big answer", definition: webhookToHttp("https://big.test/out") });
      const runId = await fire(app, applet.id);
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(run.steps[0]!.truncated).toBe(true);
      expect(Buffer.byteLength(JSON.stringify(run.steps[0]!.output))).toBeLessThanOrEqual(64 * 1024);
    });
    test("an action's input over 64 KB is stored cut with truncated: true; the request itself is sent whole", async () => {
      const app = setup();
      let received = 0;
      server.use(
        http.post("https://small.test/in", async ({ request }) => {
          received = (await request.text()).length;
          return HttpResponse.json({ ok: true });
        }),
      );
      const applet = await app.applets.create({
        name: "big request",
        definition: { ...webhookToHttp("https://small.test/in"), actions: [{ type: "http", config: { url: "https://small.test/in", body: "{{trigger.body.big}}{{trigger.body.big}}" } }] },
      });
      const runId = await fire(app, applet.id, { big: "y".repeat(40_000) });
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(received).toBe(80_000);
      expect(run.steps[0]!.output).toMatchObject({ status: 200, body: { ok: true } });
      expect(Buffer.byteLength(JSON.stringify(run.steps[0]!.input))).toBeLessThanOrEqual(64 * 1024);
      expect(run.steps[0]!.truncated).toBe(true);
    });

    test("an invalid rendered config over 64 KB is stored cut with truncated: true on the failed step", async () => {
      const app = setup();
      const applet = await app.applets.create({
        name: "big invalid",
        definition: { ...webhookToHttp("https://small.test/in"), actions: [{ type: "http", config: { url: "https://small.test/{{trigger.body.big}}{{trigger.body.big}}" } }] },
      });
      // An 80 KB URL: over the schema's 4096 characters once rendered.
      const runId = await fire(app, applet.id, { big: "z".repeat(40_000) });
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("failed");
      expect(run.error).toMatch(/rendered config is invalid/);
      expect(Buffer.byteLength(JSON.stringify(run.steps[0]!.input))).toBeLessThanOrEqual(64 * 1024);
      expect(run.steps[0]!.truncated).toBe(true);
    });
  });

  describe("worker shutdown", () => {
    test("a run claimed together with the last finish is handed back when the worker stops, not left running", async () => {
      const app = setup();
      let release: () => void = () => {};
      const held = new Promise<void>((r) => (release = r));
      server.use(
        http.post("https://slow.test/hold", async () => {
          await held;
          return HttpResponse.json({ ok: true });
        }),
      );
      const a = await app.applets.create({ name: "slow", definition: webhookToHttp("https://slow.test/hold") });
      const b = await app.applets.create({ name: "next", definition: webhookToHttp("https://status.test/status/200") });
      const first = await fire(app, a.id);
      const second = await fire(app, b.id);
      const worker = startWorker(app, { concurrency: 1 });
      while ((await app.store.runs.get(first))!.status !== "running") await new Promise((r) => setTimeout(r, 5));
      const stopped = worker.stop();
      release();
      await stopped;
      expect((await app.store.runs.get(first))!.status).toBe("succeeded");
      expect(await app.store.runs.get(second)).toMatchObject({ status: "queued", attempt: 1 });
    });
  });
});
