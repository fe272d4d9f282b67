import { http, HttpResponse } from "msw";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { Step } from "@/lib/executor/types";
import { createSandbox, type Sandbox } from "@/lib/sandbox";
import { createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { server, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/**
 * Step lists (definition version 2) run by the real executor loop on each engine: if/else, paths
 * (first and all, with otherwise), for_each, stop, nesting, `when` and continue_on_error, the
 * executed-steps limit and retries that resume per item. Each run's journal is asserted as stored.
 */
useHttpMocks();

let sandbox: Sandbox;
beforeAll(() => {
  sandbox = createSandbox({ threads: 1 });
});
afterAll(() => sandbox.close());

interface Received {
  name: string;
  key: string | null;
  body: Record<string, unknown>;
}

forEachEngine((engine) => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** An app, its worker, and a sink at https://sink.test/<name> that records each request (and answers `answer`'s status). */
  function setup(answer: (r: Received, seen: Received[]) => number = () => 200) {
    const app = createTestApp({ engine });
    cleanups.push(() => app.cleanup());
    const received: Received[] = [];
    server.use(
      http.post("https://sink.test/:name", async ({ request, params }) => {
        const r: Received = { name: String(params.name), key: request.headers.get("idempotency-key"), body: (await request.json()) as Record<string, unknown> };
        received.push(r);
        const status = answer(r, received);
        return HttpResponse.json({ ok: status < 300 }, { status });
      }),
    );
    const worker = startWorker(app, { deps: { sandbox } });
    cleanups.push(() => worker.stop());
    return { app, received, worker };
  }

  async function create(app: TestApp, steps: unknown[]) {
    return app.applets.create({ name: "steps", definition: { version: 2, trigger: { type: "webhook", config: {} }, steps } });
  }

  async function fire(app: TestApp, appletId: string, body: Record<string, unknown>) {
    return (await app.applets.test(appletId, { body })).runId;
  }

  const send = (id: string, name: string, body: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
    id,
    type: "http",
    config: { url: `https://sink.test/${name}`, method: "POST", body },
    ...extra,
  });

  /** The journal as stored, each entry cut to what says where it ran and what it decided. */
  const journal = (steps: Step[]) =>
    steps.map((s) => ({
      id: s.id,
      kind: s.kind,
      status: s.status,
      ...(s.iteration ? { iteration: s.iteration } : {}),
      ...(s.place ? { place: s.place } : {}),
      ...(s.decision ? { decision: s.decision } : {}),
      ...(s.why ? { why: s.why } : {}),
    }));

  describe("if / paths", () => {
    test("if/else: each event takes the branch its amount decides, and the journal says why", async () => {
      const { app, received, worker } = setup();
      const applet = await create(app, [
        {
          id: "big",
          type: "if",
          conditions: { all: [{ field: "trigger.body.amount", op: "gt", value: 100 }] },
          then: [send("slack", "slack", { amount: "{{trigger.body.amount}}" })],
          else: [send("email", "email", { amount: "{{trigger.body.amount}}" })],
        },
        send("after", "after", { branch: "{{steps.big.output.branch}}" }),
      ]);
      const large = await fire(app, applet.id, { amount: 120 });
      const small = await fire(app, applet.id, { amount: 50 });
      await worker.drain();
      const a = (await app.store.runs.get(large))!;
      const b = (await app.store.runs.get(small))!;
      expect([a.status, b.status]).toEqual(["succeeded", "succeeded"]);
      expect(journal(a.steps)).toEqual([
        { id: "big", kind: "if", status: "succeeded", decision: "then", why: "trigger.body.amount 120 > 100 → then" },
        { id: "slack", kind: "action", status: "succeeded", place: "big:then" },
        { id: "after", kind: "action", status: "succeeded" },
      ]);
      expect(journal(b.steps)).toEqual([
        { id: "big", kind: "if", status: "succeeded", decision: "else", why: "trigger.body.amount 50 ≤ 100 → else" },
        { id: "email", kind: "action", status: "succeeded", place: "big:else" },
        { id: "after", kind: "action", status: "succeeded" },
      ]);
      expect(received.map((r) => [r.name, r.body])).toEqual([
        ["slack", { amount: 120 }],
        ["after", { branch: "then" }],
        ["email", { amount: 50 }],
        ["after", { branch: "else" }],
      ]);
      // The http body keeps each whole-value template's type (a number stays a number). Keys name the step (not a position): `<event>:<id>`.
      expect(received[0]!.key).toBe(`${a.eventId}:slack`);
    });

    test("paths: `first` runs the first match only, `all` every match in order, and otherwise runs when none holds", async () => {
      const { app, received, worker } = setup();
      const route = (mode: "first" | "all") => ({
        id: "route",
        type: "paths",
        mode,
        paths: [
          { name: "large", conditions: { all: [{ field: "trigger.body.amount", op: "gt", value: 100 }] }, steps: [send("large", "large")] },
          { name: "vip", conditions: { any: [{ field: "trigger.body.tier", op: "eq", value: "vip" }] }, steps: [send("vip", "vip")] },
        ],
        otherwise: [send("rest", "rest")],
      });
      const first = await create(app, [route("first")]);
      const all = await create(app, [route("all")]);
      const runs = [
        await fire(app, first.id, { amount: 120, tier: "vip" }),
        await fire(app, all.id, { amount: 120, tier: "vip" }),
        await fire(app, all.id, { amount: 5, tier: "basic" }),
      ];
      await worker.drain();
      const [f, both, none] = await Promise.all(runs.map(async (id) => (await app.store.runs.get(id))!));
      expect(journal(f!.steps)).toEqual([
        { id: "route", kind: "paths", status: "succeeded", decision: "large", why: "trigger.body.amount 120 > 100 → path 'large'" },
        { id: "large", kind: "action", status: "succeeded", place: "route:large" },
      ]);
      expect(journal(both!.steps)).toEqual([
        {
          id: "route",
          kind: "paths",
          status: "succeeded",
          decision: "large, vip",
          why: `trigger.body.amount 120 > 100 → path 'large'; trigger.body.tier "vip" = "vip" → path 'vip'`,
        },
        { id: "large", kind: "action", status: "succeeded", place: "route:large" },
        { id: "vip", kind: "action", status: "succeeded", place: "route:vip" },
      ]);
      expect(journal(none!.steps)).toEqual([
        {
          id: "route",
          kind: "paths",
          status: "succeeded",
          decision: "otherwise",
          why: `'large': trigger.body.amount 5 ≤ 100; 'vip': trigger.body.tier "basic" ≠ "vip" → otherwise`,
        },
        { id: "rest", kind: "action", status: "succeeded", place: "route:otherwise" },
      ]);
      expect(received.map((r) => r.name)).toEqual(["large", "large", "vip", "rest"]);
      expect(none!.steps[0]!.output).toMatchObject({ mode: "all", taken: ["otherwise"] });
    });
  });

  describe("for_each", () => {
    test("three items, one http request each, with {{item}} and {{index}}; per-item keys; the loop's counts", async () => {
      const { app, received, worker } = setup();
      const applet = await create(app, [
        { id: "lines", type: "for_each", items: "{{trigger.body.items}}", steps: [send("row", "row", { sku: "{{item.sku}}", at: "{{index}}" })] },
        send("done", "done", { last: "{{steps.row.output.status}}" }),
      ]);
      const runId = await fire(app, applet.id, { items: [{ sku: "a" }, { sku: "b" }, { sku: "c" }] });
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(journal(run.steps)).toEqual([
        { id: "lines", kind: "for_each", status: "succeeded", why: "3 items at trigger.body.items" },
        { id: "row", kind: "action", status: "succeeded", iteration: [0], place: "lines" },
        { id: "row", kind: "action", status: "succeeded", iteration: [1], place: "lines" },
        { id: "row", kind: "action", status: "succeeded", iteration: [2], place: "lines" },
        { id: "done", kind: "action", status: "succeeded" },
      ]);
      expect(run.steps[0]!.output).toEqual({ items: 3, succeeded: 3, failed: 0, skipped: 0, not_run: 0 });
      expect(received.map((r) => [r.name, r.body, r.key])).toEqual([
        ["row", { sku: "a", at: 0 }, `${run.eventId}:row[0]`],
        ["row", { sku: "b", at: 1 }, `${run.eventId}:row[1]`],
        ["row", { sku: "c", at: 2 }, `${run.eventId}:row[2]`],
        ["done", { last: 200 }, `${run.eventId}:done`],
      ]);
    });

    test("a for_each nested inside a path: iterations and the place name both", async () => {
      const { app, received, worker } = setup();
      const applet = await create(app, [
        {
          id: "route",
          type: "paths",
          mode: "first",
          paths: [
            {
              name: "orders",
              conditions: { all: [{ field: "trigger.body.kind", op: "eq", value: "order" }] },
              steps: [
                {
                  id: "orders",
                  type: "for_each",
                  items: "{{trigger.body.orders}}",
                  steps: [{ id: "lines", type: "for_each", items: "{{item.lines}}", steps: [send("line", "line", { line: "{{item}}", i: "{{index}}" })] }],
                },
              ],
            },
          ],
        },
      ]);
      const runId = await fire(app, applet.id, { kind: "order", orders: [{ lines: ["x", "y"] }, { lines: ["z"] }] });
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(journal(run.steps).map(({ why: _w, ...e }) => e)).toEqual([
        { id: "route", kind: "paths", status: "succeeded", decision: "orders" },
        { id: "orders", kind: "for_each", status: "succeeded", place: "route:orders" },
        { id: "lines", kind: "for_each", status: "succeeded", iteration: [0], place: "route:orders/orders" },
        { id: "line", kind: "action", status: "succeeded", iteration: [0, 0], place: "route:orders/orders/lines" },
        { id: "line", kind: "action", status: "succeeded", iteration: [0, 1], place: "route:orders/orders/lines" },
        { id: "lines", kind: "for_each", status: "succeeded", iteration: [1], place: "route:orders/orders" },
        { id: "line", kind: "action", status: "succeeded", iteration: [1, 0], place: "route:orders/orders/lines" },
      ]);
      expect(received.map((r) => [r.body, r.key])).toEqual([
        [{ line: "x", i: 0 }, `${run.eventId}:line[0.0]`],
        [{ line: "y", i: 1 }, `${run.eventId}:line[0.1]`],
        [{ line: "z", i: 0 }, `${run.eventId}:line[1.0]`],
      ]);
    });

    test("continue_on_error per item: a failing item is counted and the next item runs", async () => {
      const { app, received, worker } = setup((r) => (r.body.sku === "bad" ? 400 : 200));
      const applet = await create(app, [
        { id: "lines", type: "for_each", items: "{{trigger.body.items}}", continue_on_error: true, steps: [send("row", "row", { sku: "{{item}}" })] },
        send("after", "after"),
      ]);
      const runId = await fire(app, applet.id, { items: ["a", "bad", "c"] });
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(run.steps[0]!.output).toEqual({ items: 3, succeeded: 2, failed: 1, skipped: 0, not_run: 0 });
      expect(run.steps.map((s) => [s.id, s.iteration ?? null, s.status, s.continued ?? false])).toEqual([
        ["lines", null, "succeeded", false],
        ["row", [0], "succeeded", false],
        ["row", [1], "failed", true],
        ["row", [2], "succeeded", false],
        ["after", null, "succeeded", false],
      ]);
      expect(received.map((r) => r.name)).toEqual(["row", "row", "row", "after"]);
    });

    test("items that are not a list fail the step with the type found; items past max_items are counted as not run", async () => {
      const { app, received, worker } = setup();
      const applet = await create(app, [{ id: "lines", type: "for_each", items: "{{trigger.body.items}}", max_items: 2, steps: [send("row", "row", { n: "{{item}}" })] }]);
      const object = await fire(app, applet.id, { items: { a: 1 } });
      const capped = await fire(app, applet.id, { items: [1, 2, 3, 4, 5] });
      await worker.drain();
      const failed = (await app.store.runs.get(object))!;
      expect(failed.status).toBe("failed");
      expect(failed.error).toBe("for_each lines: expected a list at trigger.body.items, got an object");
      expect(journal(failed.steps)).toEqual([{ id: "lines", kind: "for_each", status: "failed" }]);
      expect(failed.steps[0]!.error).toBe("expected a list at trigger.body.items, got an object");
      const run = (await app.store.runs.get(capped))!;
      expect(run.status).toBe("succeeded");
      expect(run.steps[0]).toMatchObject({ why: "5 items at trigger.body.items; the first 2 run (max_items 2), 3 not run", output: { items: 5, succeeded: 2, not_run: 3 } });
      expect(received.map((r) => r.body.n)).toEqual([1, 2]);
    });

    test("a retry resumes per item: items that succeeded are not sent again", async () => {
      let failOnce = true;
      const { app, received, worker } = setup((r) => {
        if (r.body.n === 1 && failOnce) {
          failOnce = false;
          return 503;
        }
        return 200;
      });
      const applet = await create(app, [{ id: "lines", type: "for_each", items: "{{trigger.body.items}}", steps: [send("row", "row", { n: "{{item}}" })] }]);
      const runId = await fire(app, applet.id, { items: [0, 1, 2] });
      await worker.drain();
      const first = (await app.store.runs.get(runId))!;
      expect(first.status).toBe("queued");
      expect(first.error).toContain("step row [item 1] (http)");
      expect(first.steps.map((s) => [s.id, s.iteration ?? null, s.status])).toEqual([
        ["lines", null, "failed"],
        ["row", [0], "succeeded"],
        ["row", [1], "failed"],
      ]);
      app.clock.advance(30_000);
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      // Item 0 once; item 1 twice (failed, then retried); item 2 once, each with its own key.
      expect(received.map((r) => [r.body.n, r.key])).toEqual([
        [0, `${run.eventId}:row[0]`],
        [1, `${run.eventId}:row[1]`],
        [1, `${run.eventId}:row[1]`],
        [2, `${run.eventId}:row[2]`],
      ]);
      expect(run.steps.map((s) => [s.id, s.iteration ?? null, s.status, s.attempt])).toEqual([
        ["lines", null, "succeeded", 2],
        ["row", [0], "succeeded", 1],
        ["row", [1], "succeeded", 2],
        ["row", [2], "succeeded", 2],
      ]);
      expect(run.steps[2]!.previous_errors).toEqual([expect.objectContaining({ attempt: 1, error: expect.stringContaining("503") })]);
    });

    test("the run ends failed at 1,000 executed steps, naming the limit", async () => {
      const { app, received, worker } = setup();
      const never = { all: [{ field: "item", op: "lt", value: 0 }] };
      const applet = await create(app, [
        {
          id: "many",
          type: "for_each",
          items: "{{trigger.body.items}}",
          max_items: 1000,
          steps: [send("a", "a", {}, { when: never }), send("b", "b", {}, { when: never })],
        },
      ]);
      const runId = await fire(app, applet.id, { items: Array.from({ length: 600 }, (_, i) => i) });
      await worker.drain(30_000);
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("failed");
      expect(run.error).toBe("the run reached the limit of 1,000 executed steps (every action, filter, AI, wait and stop of every iteration counts); it stopped before step a [item 500]");
      // The loop itself (which does not count) and 1,000 skipped actions: items 0–499 whole.
      expect(run.steps).toHaveLength(1001);
      expect(run.steps.at(-1)).toMatchObject({ id: "b", iteration: [499], status: "skipped" });
      expect(received).toEqual([]);
    }, 60_000);

    test("a for_each of the largest allowed size, one action per item, runs every item", async () => {
      const { app, received, worker } = setup();
      const applet = await create(app, [
        { id: "each", type: "for_each", items: "{{trigger.body.items}}", max_items: 1000, steps: [send("a", "a", { n: "{{item}}" })] },
      ]);
      const runId = await fire(app, applet.id, { items: Array.from({ length: 1000 }, (_, i) => i) });
      await worker.drain(60_000);
      const run = (await app.store.runs.get(runId))!;
      expect(run.error).toBeNull();
      expect(run.status).toBe("succeeded");
      expect(run.steps).toHaveLength(1001);
      expect(received).toHaveLength(1000);
    }, 90_000);
  });

  describe("when, continue_on_error, filter code and stop", () => {
    test("`when` skips an action with the reason; continue_on_error records a failure and the run goes on", async () => {
      const { app, received, worker } = setup((r) => (r.name === "broken" ? 400 : 200));
      const applet = await create(app, [
        send("vip", "vip", {}, { when: { all: [{ field: "trigger.body.tier", op: "eq", value: "vip" }] } }),
        send("broken", "broken", {}, { continue_on_error: true }),
        send("last", "last", { broken: "{{steps.broken.status}}" }),
      ]);
      const runId = await fire(app, applet.id, { tier: "basic" });
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(journal(run.steps)).toEqual([
        { id: "vip", kind: "action", status: "skipped", decision: "skip", why: `trigger.body.tier "basic" ≠ "vip" → skipped` },
        { id: "broken", kind: "action", status: "failed" },
        { id: "last", kind: "action", status: "succeeded" },
      ]);
      expect(run.steps[1]!.continued).toBe(true);
      expect(received.map((r) => [r.name, r.body])).toEqual([
        ["broken", {}],
        ["last", { broken: "failed" }],
      ]);
    });

    test("stop ends the run as skipped with its rendered reason; nothing after it runs", async () => {
      const { app, received, worker } = setup();
      const applet = await create(app, [
        send("lookup", "lookup"),
        {
          id: "known",
          type: "if",
          conditions: { all: [{ field: "trigger.body.exists", op: "eq", value: true }] },
          then: [{ id: "halt", type: "stop", status: "skipped", reason: "customer {{trigger.body.name}} already exists" }],
        },
        send("create", "create"),
      ]);
      const known = await fire(app, applet.id, { exists: true, name: "Ada" });
      const fresh = await fire(app, applet.id, { exists: false, name: "Bob" });
      await worker.drain();
      const a = (await app.store.runs.get(known))!;
      expect(a.status).toBe("skipped");
      expect(a.error).toBe("stopped at halt: customer Ada already exists");
      expect(journal(a.steps)).toEqual([
        { id: "lookup", kind: "action", status: "succeeded" },
        { id: "known", kind: "if", status: "succeeded", decision: "then", why: "trigger.body.exists true = true → then" },
        { id: "halt", kind: "stop", status: "skipped", place: "known:then", decision: "stop", why: "customer Ada already exists" },
      ]);
      const b = (await app.store.runs.get(fresh))!;
      expect(b.status).toBe("succeeded");
      expect(journal(b.steps).map((s) => s.id)).toEqual(["lookup", "known", "create"]);
      expect(b.steps[1]).toMatchObject({ decision: "else", why: "trigger.body.exists false ≠ true → nothing" });
      expect(received.map((r) => r.name)).toEqual(["lookup", "lookup", "create"]);
    });

    test("filter code in a loop sees item, index and earlier steps as globals; skip() skips only that item; set() adds vars", async () => {
      const { app, received, worker } = setup();
      const applet = await create(app, [
        send("lookup", "lookup"),
        {
          id: "lines",
          type: "for_each",
          items: "{{trigger.body.items}}",
          steps: [
            { id: "check", type: "filter", code: "if (item.qty === 0) skip('nothing to order'); set('label', item.sku + '#' + index + '/' + steps.lookup.output.status);" },
            send("row", "row", { label: "{{vars.label}}" }),
          ],
        },
      ]);
      const runId = await fire(app, applet.id, { items: [{ sku: "a", qty: 1 }, { sku: "b", qty: 0 }, { sku: "c", qty: 2 }] });
      await worker.drain();
      const run = (await app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(received.filter((r) => r.name === "row").map((r) => r.body.label)).toEqual(["a#0/200", "c#2/200"]);
      expect(run.steps[1]!.output).toEqual({ items: 3, succeeded: 2, failed: 0, skipped: 1, not_run: 0 });
      expect(run.steps.filter((s) => s.id === "check").map((s) => [s.iteration, s.status])).toEqual([
        [[0], "succeeded"],
        [[1], "skipped"],
        [[2], "succeeded"],
      ]);
    });
  });
});
