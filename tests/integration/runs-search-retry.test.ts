import { afterEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { BULK_RETRY_BATCH } from "@/lib/queue/bulk-retry";
import { testIdentity } from "../helpers/auth";
import { createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine, type TestEngine } from "../helpers/engines";

/** "Runs": search by error and payload text, bulk retry, the link between a replay and its original; through the API, on each engine. */

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function boot(engine: TestEngine) {
  const app = createTestApp({ engine });
  cleanups.push(() => app.cleanup());
  const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
  const call = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await api.handle(new Request(`http://localhost${path}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) }));
    return { status: res.status, body: (await res.json()) as T };
  };
  return { app, call };
}

const definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/in" } }] };

/** An event and its run, settled by hand as a worker would (claim, finish), with no worker polling. */
async function settled(app: TestApp, appletId: string, payload: unknown, status: "failed" | "dead" | "succeeded", error: string | null) {
  app.clock.advance(1000);
  const { runId } = (await app.store.runs.ingest({ appletId, source: "webhook", dedupeKey: null, payloadJson: JSON.stringify(payload), receivedAt: app.clock.now().toISOString(), maxAttempts: 3 }))!;
  const run = (await app.store.runs.claim("w-test", app.clock.now()))!;
  expect(run.id).toBe(runId);
  await app.store.runs.finish(run, status, [], error, app.clock.now());
  return runId;
}

type Page = { runs: { id: string }[]; next_cursor: string | null; search_stopped_at: string | null };

forEachEngine((engine) => {
  describe("runs search, bulk retry, replay links", () => {
    test("GET /api/runs?error=…&payload=… finds runs by their error text and by a value in their payload", async () => {
      const { app, call } = boot(engine);
      const a = await app.applets.create({ name: "orders", definition });
      const r1 = await settled(app, a.id, { order: { id: 1042, customer: "ann@example.com" } }, "failed", "action 1 (http): answered 503 Service Unavailable");
      const r2 = await settled(app, a.id, { order: { id: 2077 } }, "dead", "action 1 (http): timed out after 10000 ms");
      const r3 = await settled(app, a.id, { order: { id: 1042 } }, "succeeded", null);
      const ids = async (qs: string) => {
        const res = await call<Page>("GET", `/api/runs?${qs}`);
        expect(res.status).toBe(200);
        return res.body.runs.map((r) => r.id);
      };
      expect(await ids("error=answered%20503")).toEqual([r1]);
      expect(await ids("error=TIMED%20OUT")).toEqual([r2]);
      expect(await ids("payload=1042")).toEqual([r3, r1]);
      expect(await ids("payload=ann%40example.com&status=failed")).toEqual([r1]);
      expect(await ids("payload=%20%20")).toEqual([r3, r2, r1]);
      expect((await call<Page>("GET", "/api/runs?payload=1042")).body.search_stopped_at).toBeNull();
      const tooLong = await call<{ problems: { path: string }[] }>("GET", `/api/runs?error=${"x".repeat(201)}`);
      expect(tooLong.status).toBe(400);
      expect(tooLong.body.problems[0]!.path).toBe("error");
    });

    test("POST /api/runs/bulk-retry retries the failed and dead runs (attempt + 1, queued now) and says why it skipped the others", async () => {
      const { app, call } = boot(engine);
      const a = await app.applets.create({ name: "flaky", definition });
      const failed = await settled(app, a.id, { n: 1 }, "failed", "boom");
      const dead = await settled(app, a.id, { n: 2 }, "dead", "boom");
      const ok = await settled(app, a.id, { n: 3 }, "succeeded", null);
      app.clock.advance(5000);
      const res = await call<{ retried: { run_id: string; attempt: number }[]; skipped: { run_id: string; reason: string }[] }>("POST", "/api/runs/bulk-retry", { run_ids: [failed, dead, ok, "missing", failed] });
      expect(res.status).toBe(200);
      expect(res.body.retried).toEqual([
        { run_id: failed, applet_id: a.id, attempt: 2 },
        { run_id: dead, applet_id: a.id, attempt: 2 },
      ]);
      expect(res.body.skipped).toEqual([
        { run_id: ok, reason: "it is succeeded; only failed or dead runs are retried" },
        { run_id: "missing", reason: "no such run" },
      ]);
      // The Retry button's semantics: the same run, attempt + 1, queued now, max_attempts raised to fit.
      expect(await app.store.runs.get(failed)).toMatchObject({ status: "queued", attempt: 2, nextAttemptAt: app.clock.now().toISOString(), finishedAt: null });
      expect(await app.store.runs.get(ok)).toMatchObject({ status: "succeeded", attempt: 1 });
      // A second bulk retry of the same runs retries nothing: they are queued now.
      const again = await call<{ retried: unknown[]; skipped: { reason: string }[] }>("POST", "/api/runs/bulk-retry", { run_ids: [failed] });
      expect(again.body.retried).toEqual([]);
      expect(again.body.skipped[0]!.reason).toBe("it is queued; only failed or dead runs are retried");
      // Bad bodies are refused under the field.
      const empty = await call<{ problems: { path: string; message: string }[] }>("POST", "/api/runs/bulk-retry", { run_ids: [] });
      expect(empty.status).toBe(400);
      expect(empty.body.problems[0]).toEqual({ path: "run_ids", message: "run_ids is empty: select at least one run" });
      expect((await call("POST", "/api/runs/bulk-retry", { run_ids: Array.from({ length: 501 }, (_, i) => `r${i}`) })).status).toBe(400);
    });

    test(`bulk retry of more than one batch (${BULK_RETRY_BATCH}) is one transaction per batch: every batch committed`, async () => {
      const { app, call } = boot(engine);
      const a = await app.applets.create({ name: "many", definition });
      const ids: string[] = [];
      for (let i = 0; i < BULK_RETRY_BATCH + 5; i++) ids.push(await settled(app, a.id, { i }, "dead", "gave up"));
      let transactions = 0;
      const real = app.store.transaction.bind(app.store);
      app.store.transaction = (fn) => {
        transactions++;
        return real(fn);
      };
      const res = await call<{ retried: unknown[] }>("POST", "/api/runs/bulk-retry", { run_ids: ids });
      expect(res.body.retried).toHaveLength(BULK_RETRY_BATCH + 5);
      expect(transactions).toBe(2);
      const statuses = await app.store.runs.statuses(ids);
      expect([...statuses.values()].every((s) => s === "queued")).toBe(true);
    });

    test("a replay links to its original run and the original lists its replays", async () => {
      const { app, call } = boot(engine);
      const a = await app.applets.create({ name: "replayed", definition });
      const original = await settled(app, a.id, { n: 1 }, "failed", "boom");
      app.clock.advance(1000);
      const replay = (await call<{ run_id: string }>("POST", `/api/runs/${original}/replay`)).body.run_id;
      type Detail = { replay_of: { id: string; status: string } | null; replays: { id: string; status: string }[] };
      const ofReplay = (await call<Detail>("GET", `/api/runs/${replay}`)).body;
      expect(ofReplay.replay_of).toMatchObject({ id: original, status: "failed" });
      expect(ofReplay.replays).toEqual([]);
      const ofOriginal = (await call<Detail>("GET", `/api/runs/${original}`)).body;
      expect(ofOriginal.replay_of).toBeNull();
      expect(ofOriginal.replays).toEqual([expect.objectContaining({ id: replay, status: "queued" })]);
    });
  });
});
