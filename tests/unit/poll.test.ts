import { http, HttpResponse } from "msw";
import { describe, expect, test } from "vitest";
import { ManualClock } from "@/lib/core/clock";
import { loadConfig } from "@/lib/core/config";
import { silentLogger } from "@/lib/core/log";
import { emptyTriggerState } from "@/lib/triggers/types";
import { conditionHolds, decide, extractPath, parsePath, pollConfigSchema, pollTrigger, toNumber } from "@/lib/triggers/poll";
import { redact } from "@/lib/template";
import type { PollContext } from "@/lib/triggers/types";
import { makeTempDir } from "../helpers/action-context";
import { testFetch } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";

useHttpMocks();

const config = (c: Record<string, unknown>) => pollConfigSchema.parse({ url: "https://api.example.test/v", path: "data.price", ...c });

describe("AC5: paths", () => {
  test.each([
    ["data.price", ["data", "price"]],
    ["items[0].status", ["items", "0", "status"]],
    ['data["odd key"]', ["data", "odd key"]],
    ["[1].price", ["1", "price"]],
    ["", []],
  ])("AC5: %s", (p, segments) => {
    expect(parsePath(p)).toEqual(segments);
  });

  test("AC5: filters and junk are not paths", () => {
    expect(parsePath("data.price | upper")).toMatch(/not a dot\/bracket path/);
    expect(pollConfigSchema.safeParse({ url: "https://a.test", path: "data..price" }).success).toBe(false);
  });

  test("AC5: extraction reads own properties only", () => {
    const body = JSON.parse('{"data":{"price":90,"list":[{"s":"ok"}]},"__proto__":{"x":1}}');
    expect(extractPath(body, ["data", "price"])).toEqual({ found: true, value: 90 });
    expect(extractPath(body, ["data", "list", "0", "s"])).toEqual({ found: true, value: "ok" });
    expect(extractPath(body, ["data", "toString"])).toEqual({ found: false, value: undefined });
    expect(extractPath(body, ["data", "missing"])).toEqual({ found: false, value: undefined });
    expect(extractPath(body, [])).toEqual({ found: true, value: body });
  });
});

describe("AC5: conditions", () => {
  test("AC5: gt/lt coerce numeric strings; non-numbers never match", () => {
    expect(toNumber(" 42.5 ")).toBe(42.5);
    expect(toNumber("42abc")).toBeNull();
    expect(toNumber("")).toBeNull();
    expect(conditionHolds("lt", "90", 100)).toBe(true);
    expect(conditionHolds("gt", 120, "100")).toBe(true);
    expect(conditionHolds("lt", "n/a", 100)).toBe(false);
  });

  test("AC5: equals / not_equals / contains", () => {
    expect(conditionHolds("equals", "100", 100)).toBe(true);
    expect(conditionHolds("equals", { a: 1 }, { a: 1 })).toBe(true);
    expect(conditionHolds("not_equals", "open", "closed")).toBe(true);
    expect(conditionHolds("contains", "Order shipped", "shipped")).toBe(true);
    expect(conditionHolds("contains", ["a", 2], 2)).toBe(true);
    expect(conditionHolds("contains", { shipped: true }, "shipped")).toBe(false);
  });

  test("AC5: lt 100 over 120, 90, 80, 110, 70 fires at 90 and 70 only (edge, not level)", () => {
    const c = config({ condition: "lt", target: 100 });
    let memory: unknown = null;
    const fired: unknown[] = [];
    for (const v of [120, 90, 80, 110, 70]) {
      const d = decide(c, memory, v);
      if (d.fire) fired.push(v);
      memory = d.memory;
    }
    expect(fired).toEqual([90, 70]);
  });

  test("AC5: changed uses deep equality; the first poll, and the first after the rule changed, only remember", () => {
    const c = config({ condition: "changed" });
    const first = decide(c, null, { a: [1, 2] });
    expect(first.fire).toBe(false);
    expect(decide(c, first.memory, { a: [1, 2] }).fire).toBe(false);
    expect(decide(c, first.memory, { a: [1, 3] })).toMatchObject({ fire: true, previousValue: { a: [1, 2] } });
    const edited = config({ condition: "changed", path: "data.other" });
    expect(decide(edited, first.memory, 5).fire).toBe(false);
  });

  test("AC5: a non-changed condition needs a target, and gt/lt a numeric one", () => {
    expect(pollConfigSchema.safeParse({ url: "https://a.test", condition: "equals" }).success).toBe(false);
    expect(pollConfigSchema.safeParse({ url: "https://a.test", condition: "lt", target: "cheap" }).success).toBe(false);
    expect(pollConfigSchema.safeParse({ url: "https://a.test", condition: "lt", target: "100" }).success).toBe(true);
    expect(pollConfigSchema.safeParse({ url: "https://a.test", interval_min: 0 }).success).toBe(false);
    expect(pollConfigSchema.safeParse({ url: "https://a.test", headers: { "Bad Header": "x" } }).success).toBe(false);
  });
});

describe("AC5: fetching", () => {
  const ctx = (): PollContext => ({
    http: testFetch(),
    clock: new ManualClock("2026-03-07T12:00:00.000Z"),
    log: silentLogger,
    config: loadConfig({ DATA_DIR: makeTempDir() }),
    render: async (t) => t.replace("{{secrets.TOKEN}}", "s3cret"),
    redact: (v) => redact(v, ["s3cret"]),
  });

  test("AC5: POST with a rendered body and headers; the payload shows the configured URL and caps the response", async () => {
    let seen: { body: string; auth: string | null; type: string | null } | null = null;
    server.use(
      http.post("https://api.example.test/search", async ({ request }) => {
        seen = { body: await request.text(), auth: request.headers.get("authorization"), type: request.headers.get("content-type") };
        return HttpResponse.json({ count: 3, blob: "x".repeat(100_000) });
      }),
    );
    const c = pollConfigSchema.parse({ url: "https://api.example.test/search", method: "POST", body: '{"q":"widgets","key":"{{secrets.TOKEN}}"}', headers: { Authorization: "Bearer {{secrets.TOKEN}}" }, path: "count" });
    const first = await pollTrigger.poll(c, emptyTriggerState(), ctx(), new Date("2026-03-07T12:00:00.000Z"));
    expect(seen).toEqual({ body: '{"q":"widgets","key":"s3cret"}', auth: "Bearer s3cret", type: "application/json" });
    expect(first.events).toEqual([]);
    server.use(http.post("https://api.example.test/search", () => HttpResponse.json({ count: 4, blob: "x".repeat(100_000) })));
    const second = await pollTrigger.poll(c, { ...emptyTriggerState(), lastValue: first.state.lastValue }, ctx(), new Date("2026-03-07T12:05:00.000Z"));
    expect(second.events).toHaveLength(1);
    const payload = second.events[0]!.payload;
    expect(second.events[0]!.dedupeKey).toBe("2026-03-07T12:05:00.000Z");
    expect(payload).toMatchObject({ value: 4, previous_value: 3, url: "https://api.example.test/search", status: 200, response_truncated: true });
    expect(Buffer.byteLength(JSON.stringify(payload.response))).toBeLessThanOrEqual(64 * 1024);
  });

  test("AC5: a path missing from the response is an error, not a change to null", async () => {
    server.use(http.get("https://api.example.test/v", () => HttpResponse.json({ error: "rate limited" })));
    const r = await pollTrigger.poll(config({}), emptyTriggerState(), ctx(), new Date());
    expect(r.events).toEqual([]);
    expect(r.state).toMatchObject({ errorCount: 1, lastError: 'poll: path "data.price" is not in the response of https://api.example.test/v' });
    expect(r.state.lastValue).toBeUndefined();
  });

  test("AC5: Fetch now returns the extracted value and status", async () => {
    server.use(http.get("https://api.example.test/v", () => HttpResponse.json({ data: { price: 90 } })));
    expect(await pollTrigger.preview!(config({ condition: "lt", target: 100 }), ctx())).toMatchObject({ status: 200, value: 90, path: "data.price", condition_holds_now: true });
  });
});
