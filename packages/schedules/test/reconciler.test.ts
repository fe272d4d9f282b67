import { describe, expect, it, vi } from "vitest";
import { ScheduleError, ScheduleMemoryAdapter, ScheduleReconciler } from "../src/index";
import type { Schedule, ScheduleAdapter } from "../src/index";
import { MemoryScheduleStore } from "../src/stores/memory";
import { makeSchedule, T0, TestClock } from "./contract";

const MINUTE = 60_000;
const later = (ms: number) => new Date(T0.getTime() + ms);

async function storeWith(...schedules: Schedule[]): Promise<MemoryScheduleStore> {
  const store = new MemoryScheduleStore({ clock: new TestClock() });
  for (const s of schedules) await store.add(s);
  return store;
}

/** The same store seen through an adapter that lacks claimDue (an older or minimal store). */
function withoutClaim(store: MemoryScheduleStore): ScheduleAdapter {
  return {
    add: (s) => store.add(s),
    get: (id) => store.get(id),
    list: (f) => store.list(f),
    update: (id, p) => store.update(id, p),
    delete: (id) => store.delete(id),
    generateId: () => store.generateId(),
    ping: () => store.ping(),
  };
}

describe("ScheduleReconciler.tick", () => {
  it("fires due, enabled schedules of its kinds only, records the run and advances nextRunAt", async () => {
    const store = await storeWith(
      makeSchedule({ id: "due" }),
      makeSchedule({ id: "future", nextRunAt: later(MINUTE) }),
      makeSchedule({ id: "disabled", enabled: false }),
      makeSchedule({ id: "other-kind", kind: "broadcast" }),
    );
    const triggerFn = vi.fn((s: Schedule) => `run-${s.id}`);
    const reconciler = new ScheduleReconciler({ adapter: store, kinds: ["signal"], triggerFn });
    const now = later(1_500);
    expect(await reconciler.tick(now)).toEqual({ fired: ["due"], skipped: [], errored: [], lost: [] });
    expect(triggerFn).toHaveBeenCalledTimes(1);
    expect(triggerFn.mock.calls[0]?.[0]).toMatchObject({ id: "due", target: "send-digest" });
    expect(await store.get("due")).toMatchObject({
      lastRunAt: now,
      lastRunStatus: "triggered",
      lastRunId: "run-due",
      updatedAt: now,
      nextRunAt: later(5 * MINUTE),
    });
    expect((await store.get("other-kind"))?.lastRunStatus).toBeUndefined();
    expect((await store.get("disabled"))?.nextRunAt).toEqual(T0);
  });

  it("takes the time from the injected clock when tick() gets none", async () => {
    const store = await storeWith(makeSchedule({ id: "a", nextRunAt: later(10 * MINUTE) }));
    const clock = new TestClock(later(MINUTE));
    const reconciler = new ScheduleReconciler({ adapter: store, clock, triggerFn: () => undefined });
    expect((await reconciler.tick()).fired).toEqual([]);
    clock.current = later(10 * MINUTE);
    expect((await reconciler.tick()).fired).toEqual(["a"]);
    expect((await store.get("a"))?.lastRunAt).toEqual(later(10 * MINUTE));
  });

  it("records an object's string id as lastRunId, and clears it when the trigger returns none", async () => {
    const store = await storeWith(makeSchedule({ id: "a", lastRunId: "older" }));
    let result: unknown = { id: "run-7", extra: true };
    const reconciler = new ScheduleReconciler({ adapter: store, triggerFn: async () => result });
    await reconciler.tick(T0);
    expect((await store.get("a"))?.lastRunId).toBe("run-7");
    result = 42;
    await reconciler.tick(later(5 * MINUTE));
    const got = await store.get("a");
    expect(got?.lastRunStatus).toBe("triggered");
    expect(got && "lastRunId" in got).toBe(false);
  });

  it("skips an overlapping run: status skipped:overlap, slot consumed, trigger not called, lastRunAt kept", async () => {
    const store = await storeWith(makeSchedule({ id: "busy", lastRunAt: later(-MINUTE) }));
    const triggerFn = vi.fn(() => "run");
    const hasPendingOrRunning = vi.fn(async (s: Schedule) => s.id === "busy");
    const reconciler = new ScheduleReconciler({ adapter: store, triggerFn, hasPendingOrRunning });
    expect(await reconciler.tick(T0)).toEqual({ fired: [], skipped: ["busy"], errored: [], lost: [] });
    expect(triggerFn).not.toHaveBeenCalled();
    expect(hasPendingOrRunning).toHaveBeenCalledTimes(1);
    expect(await store.get("busy")).toMatchObject({ lastRunStatus: "skipped:overlap", lastRunAt: later(-MINUTE), nextRunAt: later(5 * MINUTE) });
    expect((await reconciler.tick(T0)).skipped).toEqual([]);
  });

  it("a throwing trigger records errored, tells onError, and never busy-loops: next fire is the next slot", async () => {
    const store = await storeWith(makeSchedule({ id: "fails" }));
    const boom = new Error("target exploded");
    const triggerFn = vi.fn(() => {
      throw boom;
    });
    const onError = vi.fn();
    const reconciler = new ScheduleReconciler({ adapter: store, triggerFn, onError });
    expect(await reconciler.tick(T0)).toEqual({ fired: [], skipped: [], errored: ["fails"], lost: [] });
    expect(onError).toHaveBeenCalledWith(boom, expect.objectContaining({ id: "fails" }));
    expect(await store.get("fails")).toMatchObject({ lastRunStatus: "errored", lastRunAt: T0, nextRunAt: later(5 * MINUTE) });
    for (let i = 0; i < 5; i++) await reconciler.tick(later(4 * MINUTE));
    expect(triggerFn).toHaveBeenCalledTimes(1);
    await reconciler.tick(later(5 * MINUTE));
    expect(triggerFn).toHaveBeenCalledTimes(2);
  });

  it("after downtime fires once and moves to the next slot after now: no backlog", async () => {
    const store = await storeWith(makeSchedule({ id: "missed", nextRunAt: T0 }));
    const triggerFn = vi.fn();
    const reconciler = new ScheduleReconciler({ adapter: store, triggerFn });
    const now = later(2 * 60 * MINUTE + 3 * MINUTE);
    for (let i = 0; i < 3; i++) await reconciler.tick(now);
    expect(triggerFn).toHaveBeenCalledTimes(1);
    expect((await store.get("missed"))?.nextRunAt).toEqual(later(2 * 60 * MINUTE + 5 * MINUTE));
  });

  it("without claimDue: warns once, falls back to compare-then-update guarded within the process: no slot fires twice", async () => {
    const memory = await storeWith(makeSchedule({ id: "a" }), makeSchedule({ id: "b", nextRunAt: later(MINUTE) }));
    const adapter = withoutClaim(memory);
    const logger = { warn: vi.fn() };
    const triggerFn = vi.fn();
    const first = new ScheduleReconciler({ adapter, triggerFn, logger });
    const second = new ScheduleReconciler({ adapter, triggerFn, logger: { warn: () => undefined } });
    const [one, two] = await Promise.all([first.tick(T0), second.tick(T0)]);
    expect([...one.fired, ...two.fired]).toEqual(["a"]);
    expect([...one.lost, ...two.lost]).toEqual(["a"]);
    await first.tick(later(MINUTE));
    expect(triggerFn).toHaveBeenCalledTimes(2);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn.mock.calls[0]?.[0]).toMatch(/no claimDue/);
    expect((await memory.get("a"))?.nextRunAt).toEqual(later(5 * MINUTE));
  });

  it("without claimDue, an adapter whose update resolves nothing (the original interface) still fires", async () => {
    const memory = await storeWith(makeSchedule({ id: "a" }));
    const specShaped: ScheduleAdapter = {
      ...withoutClaim(memory),
      update: async (id, patch) => {
        await memory.update(id, patch);
      },
    };
    const triggerFn = vi.fn();
    const summary = await new ScheduleReconciler({ adapter: specShaped, triggerFn, logger: { warn: () => undefined } }).tick(T0);
    expect(summary.fired).toEqual(["a"]);
    expect(triggerFn).toHaveBeenCalledTimes(1);
    expect((await memory.get("a"))?.nextRunAt).toEqual(later(5 * MINUTE));
  });

  it("reads intervals with the host's parseInterval when given one; a parser's nonsense is refused", async () => {
    const store = await storeWith(makeSchedule({ id: "a", interval: "5m" }), makeSchedule({ id: "b", interval: "5m" }));
    // A host whose "m" means months would be odd; the point is that its parser decides.
    const parseInterval = vi.fn((spec: string) => (spec === "5m" ? 7 * MINUTE : Number.NaN));
    await new ScheduleReconciler({ adapter: store, triggerFn: () => undefined, parseInterval }).tick(T0);
    expect(parseInterval).toHaveBeenCalledWith("5m");
    expect((await store.get("a"))?.nextRunAt).toEqual(later(7 * MINUTE));
    const onError = vi.fn();
    await new ScheduleReconciler({ adapter: store, triggerFn: () => undefined, parseInterval: () => -1, onError }).tick(later(7 * MINUTE));
    expect(String(onError.mock.calls[0]?.[0])).toMatch(/not a positive whole number of milliseconds/);
  });

  it("exports the in-process store under the spec's name, ScheduleMemoryAdapter", () => {
    expect(ScheduleMemoryAdapter).toBe(MemoryScheduleStore);
  });

  it("two reconcilers ticking at once on one store: each slot fires once, the loser reports it lost", async () => {
    const store = await storeWith(makeSchedule({ id: "x" }), makeSchedule({ id: "y" }));
    const calls: string[] = [];
    const make = () => new ScheduleReconciler({ adapter: store, triggerFn: (s) => void calls.push(s.id) });
    const summaries = await Promise.all([make().tick(T0), make().tick(T0)]);
    expect(calls.sort()).toEqual(["x", "y"]);
    expect(summaries.flatMap((s) => s.lost).sort()).toEqual(["x", "y"]);
  });

  it("reads due schedules in batches, all in one tick; maxPerTick leaves the rest for the next tick", async () => {
    const schedules = Array.from({ length: 10 }, (_, i) => makeSchedule({ id: `s${i}`, nextRunAt: later(-i) }));
    const store = await storeWith(...schedules);
    const list = vi.spyOn(store, "list");
    const fired: string[] = [];
    const batched = new ScheduleReconciler({ adapter: store, batchSize: 3, triggerFn: (s) => void fired.push(s.id) });
    expect((await batched.tick(T0)).fired.length).toBe(10);
    expect(new Set(fired).size).toBe(10);
    expect(list.mock.calls.every(([filter]) => filter?.limit === 3 && filter.due === true && filter.enabled === true)).toBe(true);
    expect(list).toHaveBeenCalledTimes(4);

    const store2 = await storeWith(...schedules);
    const bounded = new ScheduleReconciler({ adapter: store2, batchSize: 3, maxPerTick: 4, triggerFn: () => undefined });
    expect((await bounded.tick(T0)).fired).toEqual(["s9", "s8", "s7", "s6"]);
    expect((await bounded.tick(T0)).fired).toEqual(["s5", "s4", "s3", "s2"]);
  });

  it("passes its kinds to the store so other kinds' due schedules cannot fill its batches", async () => {
    const store = await storeWith(
      ...Array.from({ length: 5 }, (_, i) => makeSchedule({ id: `b${i}`, kind: "broadcast", nextRunAt: later(-100 - i) })),
      makeSchedule({ id: "sig", kind: "signal" }),
    );
    const reconciler = new ScheduleReconciler({ adapter: store, kinds: ["signal"], batchSize: 2, maxPerTick: 2, triggerFn: () => undefined });
    expect((await reconciler.tick(T0)).fired).toEqual(["sig"]);
  });

  it("runs up to `concurrency` triggers at once", async () => {
    const store = await storeWith(...Array.from({ length: 12 }, (_, i) => makeSchedule({ id: `c${i}` })));
    let inFlight = 0;
    let peak = 0;
    const reconciler = new ScheduleReconciler({
      adapter: store,
      concurrency: 4,
      triggerFn: async () => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
      },
    });
    expect((await reconciler.tick(T0)).fired.length).toBe(12);
    expect(peak).toBe(4);
  });

  it("a failing claim does not fire, is reported, and does not stop the other schedules", async () => {
    const store = await storeWith(makeSchedule({ id: "broken", nextRunAt: later(-1) }), makeSchedule({ id: "fine" }));
    const failure = new Error("connection reset");
    const adapter: ScheduleAdapter = Object.assign(withoutClaim(store), {
      claimDue: (id: string, expected: Date, next: Date) => (id === "broken" ? Promise.reject(failure) : store.claimDue(id, expected, next)),
    });
    const onError = vi.fn();
    const triggerFn = vi.fn();
    const reconciler = new ScheduleReconciler({ adapter, triggerFn, onError });
    expect(await reconciler.tick(T0)).toEqual({ fired: ["fine"], skipped: [], errored: ["broken"], lost: [] });
    expect(triggerFn).toHaveBeenCalledTimes(1);
    expect(onError).toHaveBeenCalledWith(failure, expect.objectContaining({ id: "broken" }));
    expect((await store.get("broken"))?.nextRunAt).toEqual(later(-1));
  });

  it("disables a stored schedule whose timing cannot be computed, instead of failing on every tick", async () => {
    const store = await storeWith(makeSchedule({ id: "bad" }));
    const corrupted: ScheduleAdapter = Object.assign(withoutClaim(store), {
      list: async (f: Parameters<ScheduleAdapter["list"]>[0]) => (await store.list(f)).map((s) => ({ ...s, interval: "every so often" })),
      claimDue: store.claimDue.bind(store),
    });
    const onError = vi.fn();
    const triggerFn = vi.fn();
    const reconciler = new ScheduleReconciler({ adapter: corrupted, triggerFn, onError });
    expect((await reconciler.tick(T0)).errored).toEqual(["bad"]);
    expect(triggerFn).not.toHaveBeenCalled();
    expect(onError.mock.calls[0]?.[0]).toBeInstanceOf(ScheduleError);
    expect(await store.get("bad")).toMatchObject({ enabled: false, lastRunStatus: "errored:invalid-schedule" });
    expect((await reconciler.tick(T0)).errored).toEqual([]);
  });

  it("does not fire a schedule a stale store lists as due after another runner advanced it", async () => {
    const store = await storeWith(makeSchedule({ id: "moved", nextRunAt: later(5 * MINUTE) }));
    const stale: ScheduleAdapter = Object.assign(withoutClaim(store), {
      list: () => store.list({}),
      claimDue: store.claimDue.bind(store),
    });
    const triggerFn = vi.fn();
    const reconciler = new ScheduleReconciler({ adapter: stale, triggerFn });
    expect(await reconciler.tick(T0)).toEqual({ fired: [], skipped: [], errored: [], lost: ["moved"] });
    expect(triggerFn).not.toHaveBeenCalled();
  });

  it("rejects when the store cannot list; a throwing onError does not stop the tick", async () => {
    const store = await storeWith(makeSchedule({ id: "a" }), makeSchedule({ id: "b" }));
    const down: ScheduleAdapter = Object.assign(withoutClaim(store), { list: () => Promise.reject(new Error("ECONNREFUSED")) });
    await expect(new ScheduleReconciler({ adapter: down, triggerFn: () => undefined }).tick(T0)).rejects.toThrow("ECONNREFUSED");

    const triggerFn = vi.fn(() => {
      throw new Error("nope");
    });
    const reconciler = new ScheduleReconciler({
      adapter: store,
      triggerFn,
      onError: () => {
        throw new Error("handler bug");
      },
    });
    expect((await reconciler.tick(T0)).errored).toEqual(["a", "b"]);
  });

  it("refuses nonsensical options", () => {
    const store = new MemoryScheduleStore();
    expect(() => new ScheduleReconciler({ adapter: store, triggerFn: () => undefined, batchSize: 0 })).toThrow(/batchSize/);
    expect(() => new ScheduleReconciler({ adapter: store, triggerFn: () => undefined, concurrency: 1.5 })).toThrow(/concurrency/);
  });
});
