import { describe, expect, test } from "vitest";
import { checkDefinition } from "@/lib/definition";
import { controlsWarnings, debouncedTrigger, ingestControls, isDefaultControls, laneOf } from "@/lib/definition/controls";
import { admitStart, rateSlot } from "@/lib/db/store/run-controls";

const def = (controls: unknown) => ({ version: 2, trigger: { type: "webhook", config: {} }, steps: [{ type: "http", config: { url: "https://example.com/in" } }], controls });
const problemsOf = (controls: unknown) => {
  const r = checkDefinition(def(controls));
  return r.ok ? [] : r.problems;
};

describe("controls over runs: settings", () => {
  test("values out of range are refused with the field named: a concurrency of 0, a window of 0 s or over 7 days, a period of 0 s", () => {
    expect(problemsOf({ concurrency: { mode: "parallel", max: 0 } })).toEqual([{ path: "controls.concurrency.max", message: "must be at least 1" }]);
    expect(problemsOf({ debounce: { window_seconds: 0 } })).toEqual([{ path: "controls.debounce.window_seconds", message: "the window must be at least 1 s" }]);
    expect(problemsOf({ debounce: { window_seconds: 7 * 86_400 + 1 } })).toEqual([{ path: "controls.debounce.window_seconds", message: "the window must be at most 7 days (604800 s)" }]);
    expect(problemsOf({ rate_limit: { max: 10, period_seconds: 0 } })).toEqual([{ path: "controls.rate_limit.period_seconds", message: "the period must be at least 1 s" }]);
    expect(problemsOf({ concurrency: { mode: "per_key", key: " " } })[0]?.path).toBe("controls.concurrency.key");
    expect(problemsOf({ concurrency: { mode: "sideways" } })[0]?.path).toBe("controls.concurrency.mode");
    expect(problemsOf({ debounce: { window_seconds: 7 * 86_400, keep: "all" }, rate_limit: { max: 10, period_seconds: 60 }, concurrency: { mode: "per_key", key: "{{trigger.body.id}}" } })).toEqual([]);
  });

  test("strict order: with in_order or per_key concurrency; with parallel lanes refused, naming the field; not a default, but nothing to do at ingest", () => {
    expect(problemsOf({ order: "strict" })).toEqual([]);
    expect(problemsOf({ order: "strict", concurrency: { mode: "per_key", key: "{{trigger.body.id}}" } })).toEqual([]);
    expect(problemsOf({ order: "strict", concurrency: { mode: "parallel", max: 3 } })).toEqual([{ path: "controls.order", message: expect.stringContaining('use concurrency "in_order" or "per_key"') }]);
    expect(problemsOf({ order: "sometimes" })).toEqual([{ path: "controls.order", message: "must be relaxed or strict" }]);
    expect(isDefaultControls({ order: "strict" })).toBe(false);
    expect(isDefaultControls({ order: "relaxed" })).toBe(true);
    expect(ingestControls({ order: "strict" }, {})).toBeUndefined();
  });

  test("absent or in-order controls are the default: nothing for the store to do on the hot path", () => {
    expect(isDefaultControls(undefined)).toBe(true);
    expect(ingestControls({ concurrency: { mode: "in_order" } }, {})).toBeUndefined();
    expect(ingestControls({ rate_limit: { max: 5, period_seconds: 60, overflow: "drop" } }, {})).toEqual({ lane: "", rate: { max: 5, periodMs: 60_000, overflow: "drop" } });
    expect(ingestControls({ debounce: { window_seconds: 30, keep: "all" } }, {})).toEqual({ lane: "", debounceMs: 30_000 });
  });

  test("a key template renders the run's lane; one that renders empty groups those runs under the one empty key, and the settings warn", () => {
    const perKey = { concurrency: { mode: "per_key" as const, key: "{{trigger.body.customer_id}}" } };
    expect(laneOf(perKey, { body: { customer_id: "c-42" } })).toBe("k:c-42");
    expect(laneOf(perKey, { body: {} })).toBe("k:");
    expect(laneOf({ concurrency: { mode: "parallel", max: 4 } }, {}, () => 3)).toBe("p:3");
    expect(controlsWarnings(perKey, { body: { customer_id: "c-42" } })).toEqual([]);
    expect(controlsWarnings(perKey, { body: {} })).toEqual([{ path: "controls.concurrency.key", message: expect.stringMatching(/^renders empty for the sample event \(unresolved: trigger.body.customer_id\): every run whose key is empty shares one lane/) }]);
  });
});

describe("controls over runs: slots and merged events", () => {
  test("a rate limit's slot is the max-th slot before it plus the period, never before the last one", () => {
    let slots: number[] = [];
    const got = [];
    for (const at of [0, 1, 2, 3, 200_000]) {
      const d = rateSlot(slots, at, 2, 60_000);
      got.push(d.slot);
      slots = d.keep;
    }
    expect(got).toEqual([0, 1, 60_000, 60_001, 200_000]);
    expect(slots).toEqual([60_001, 200_000]);
  });

  test("a debounced run sees the first, the last, or all events (the last one's fields and every event as events)", () => {
    const events = [{ n: 1 }, { n: 2 }, { n: 3 }];
    expect(debouncedTrigger("first", events)).toEqual({ n: 1 });
    expect(debouncedTrigger("last", events)).toEqual({ n: 3 });
    expect(debouncedTrigger("all", events)).toEqual({ n: 3, events });
  });
});

describe("controls over runs: a rate limit at the start", () => {
  test("admits while fewer than max started in the period before now, then holds until the max-th last start plus the period", () => {
    const m = 60_000;
    expect(admitStart([], 0, 2, m)).toEqual({ admit: true, keep: [0] });
    expect(admitStart([0], 10, 2, m)).toEqual({ admit: true, keep: [0, 10] });
    expect(admitStart([0, 10], 20, 2, m)).toEqual({ admit: false, until: 60_000 });
    // Starts older than the period do not count (after an outage: none do).
    expect(admitStart([0, 10], 60_000, 2, m)).toEqual({ admit: true, keep: [10, 60_000] });
    expect(admitStart([0, 10], 10 * m, 2, m)).toEqual({ admit: true, keep: [10 * m] });
  });
});
