/**
 * The behaviour every ScheduleAdapter promises. Each store's test file calls
 * `runScheduleStoreContract` with a factory; a store that cannot run a case says why in its name.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ScheduleConflictError, ScheduleReconciler, ScheduleValidationError } from "../src/index";
import type { Schedule, ScheduleAdapter, ScheduleClock } from "../src/index";

export const T0 = new Date("2026-03-01T10:00:00.123Z");
const MINUTE = 60_000;

export class TestClock implements ScheduleClock {
  constructor(public current: Date = T0) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
}

export function makeSchedule(overrides: Partial<Schedule> = {}): Schedule {
  return {
    id: overrides.id ?? `s-${Math.random().toString(36).slice(2)}`,
    kind: "signal",
    target: "send-digest",
    interval: "5m",
    enabled: true,
    nextRunAt: T0,
    createdAt: new Date(T0.getTime() - MINUTE),
    updatedAt: new Date(T0.getTime() - MINUTE),
    ...overrides,
  };
}

export interface ScheduleStoreContractOptions<S extends ScheduleAdapter> {
  name: string;
  /** A fresh, empty store (its own table / key prefix) whose clock is `clock`. */
  create: (clock: ScheduleClock) => Promise<S>;
  /** Drops what `create` made and closes the store. */
  cleanup: (store: S) => Promise<void>;
  /**
   * A second, independent connection to the same storage as `store`, for the multi-runner case.
   * Absent when the store cannot be shared (memory); `noPeerReason` then names the reason.
   */
  connectPeer?: (store: S) => Promise<ScheduleAdapter>;
  noPeerReason?: string;
}

export function runScheduleStoreContract<S extends ScheduleAdapter>(options: ScheduleStoreContractOptions<S>): void {
  const { name, create, cleanup, connectPeer } = options;

  describe(`ScheduleAdapter contract: ${name}`, () => {
    const open: S[] = [];
    const clock = new TestClock();
    const fresh = async (): Promise<S> => {
      clock.current = T0;
      const store = await create(clock);
      open.push(store);
      return store;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((store) => cleanup(store)));
    });

    it("add then get returns the record to the millisecond, optional fields absent", async () => {
      const store = await fresh();
      const full = makeSchedule({
        id: "full",
        cron: "0 9 * * 1-5",
        interval: undefined,
        timezone: "America/New_York",
        input: { to: ["a@example.com"], n: 3, nested: { ok: true, note: "héllo ✓" } },
        lastRunAt: new Date(T0.getTime() - 1),
        lastRunStatus: "triggered",
        lastRunId: "run-1",
        createdBy: "user-7",
        nextRunAt: new Date("2026-03-02T14:00:00.001Z"),
      });
      delete full.interval;
      await store.add(full);
      expect(await store.get("full")).toEqual(full);

      const minimal = makeSchedule({ id: "minimal" });
      await store.add(minimal);
      const got = await store.get("minimal");
      expect(got).toEqual(minimal);
      for (const key of ["cron", "timezone", "input", "lastRunAt", "lastRunStatus", "lastRunId", "createdBy"] as const) {
        expect(got && key in got, key).toBe(false);
      }
    });

    it("get of an unknown id is null", async () => {
      const store = await fresh();
      expect(await store.get("nope")).toBeNull();
    });

    it("add refuses a duplicate id with ScheduleConflictError and keeps the first", async () => {
      const store = await fresh();
      await store.add(makeSchedule({ id: "dup", target: "first" }));
      await expect(store.add(makeSchedule({ id: "dup", target: "second" }))).rejects.toBeInstanceOf(ScheduleConflictError);
      expect((await store.get("dup"))?.target).toBe("first");
    });

    it("add refuses an invalid schedule with ScheduleValidationError and stores nothing", async () => {
      const store = await fresh();
      const bad: Array<Partial<Schedule>> = [
        { interval: "5 minutes" },
        { interval: undefined },
        { cron: "0 9 * * *" },
        { interval: "1h", timezone: "Europe/Berlin" },
        { interval: undefined, cron: "0 0 9 * * *" },
        { interval: undefined, cron: "0 9 * * *", timezone: "Mars/Olympus" },
        { nextRunAt: new Date(Number.NaN) },
        { kind: "" },
        { kind: "k".repeat(192) },
      ];
      for (const [i, overrides] of bad.entries()) {
        await expect(store.add(makeSchedule({ id: `bad-${i}`, ...overrides })), JSON.stringify(overrides)).rejects.toBeInstanceOf(ScheduleValidationError);
      }
      await expect(store.add(makeSchedule({ id: "i".repeat(192) }))).rejects.toThrow(/id must be at most 191 characters/);
      expect(await store.list()).toEqual([]);
    });

    it("the longest id and kind every store keys on, and long free text, are stored alike", async () => {
      const store = await fresh();
      const id = "é".repeat(191);
      const long = makeSchedule({ id, kind: "k".repeat(191), interval: undefined, cron: Array.from({ length: 60 }, (_, m) => m).join(",") + " * * * *", createdBy: "c".repeat(1000) });
      await store.add(long);
      expect(await store.get(id)).toEqual(long);
      expect(await store.update(id, { lastRunId: "r".repeat(1000), lastRunStatus: "s".repeat(600) })).toBe(true);
      expect(await store.get(id)).toMatchObject({ lastRunId: "r".repeat(1000), lastRunStatus: "s".repeat(600) });
      await expect(store.update(id, { kind: "k".repeat(192) })).rejects.toBeInstanceOf(ScheduleValidationError);
    });

    it("list orders by nextRunAt then id and filters by kind (one or several) and enabled", async () => {
      const store = await fresh();
      const at = (ms: number) => new Date(T0.getTime() + ms);
      await store.add(makeSchedule({ id: "c", kind: "signal", nextRunAt: at(2) }));
      await store.add(makeSchedule({ id: "b", kind: "broadcast", nextRunAt: at(1) }));
      await store.add(makeSchedule({ id: "a", kind: "signal", nextRunAt: at(1), enabled: false }));
      await store.add(makeSchedule({ id: "d", kind: "applet", nextRunAt: at(0) }));
      const ids = async (filter?: Parameters<ScheduleAdapter["list"]>[0]) => (await store.list(filter)).map((s) => s.id);
      expect(await ids()).toEqual(["d", "a", "b", "c"]);
      expect(await ids({ kind: "signal" })).toEqual(["a", "c"]);
      expect(await ids({ kind: ["signal", "broadcast"] })).toEqual(["a", "b", "c"]);
      expect(await ids({ kind: [] })).toEqual([]);
      expect(await ids({ enabled: true })).toEqual(["d", "b", "c"]);
      expect(await ids({ enabled: false })).toEqual(["a"]);
      expect(await ids({ kind: "signal", enabled: true })).toEqual(["c"]);
      expect(await ids({ limit: 2 })).toEqual(["d", "a"]);
      expect(await ids({ limit: 0 })).toEqual([]);
    });

    it("list due includes nextRunAt == now, excludes now + 1 ms, and uses the store clock without now", async () => {
      const store = await fresh();
      await store.add(makeSchedule({ id: "past", nextRunAt: new Date(T0.getTime() - 10 * MINUTE) }));
      await store.add(makeSchedule({ id: "exact", nextRunAt: T0 }));
      await store.add(makeSchedule({ id: "next-ms", nextRunAt: new Date(T0.getTime() + 1) }));
      await store.add(makeSchedule({ id: "off", nextRunAt: new Date(T0.getTime() - MINUTE), enabled: false }));
      const ids = async (filter: Parameters<ScheduleAdapter["list"]>[0]) => (await store.list(filter)).map((s) => s.id);
      expect(await ids({ due: true, enabled: true, now: T0 })).toEqual(["past", "exact"]);
      expect(await ids({ due: true, now: T0 })).toEqual(["past", "off", "exact"]);
      expect(await ids({ due: true, enabled: true, now: T0, limit: 1 })).toEqual(["past"]);
      clock.current = new Date(T0.getTime() + 1);
      expect(await ids({ due: true, enabled: true })).toEqual(["past", "exact", "next-ms"]);
      clock.current = new Date(T0.getTime() - 11 * MINUTE);
      expect(await ids({ due: true, enabled: true })).toEqual([]);
    });

    it("update patches fields, null clears, updatedAt defaults to the store clock; false for an unknown id", async () => {
      const store = await fresh();
      await store.add(makeSchedule({ id: "u", input: { a: 1 }, lastRunId: "old", createdBy: "me" }));
      clock.current = new Date(T0.getTime() + 5_000);
      const lastRunAt = new Date(T0.getTime() + 4_321);
      expect(await store.update("u", { target: "other", input: { b: [1, 2] }, lastRunAt, lastRunStatus: "triggered", lastRunId: null, createdBy: null })).toBe(true);
      const got = await store.get("u");
      expect(got).toEqual(
        makeSchedule({ id: "u", target: "other", input: { b: [1, 2] }, lastRunAt, lastRunStatus: "triggered", updatedAt: clock.now() }),
      );
      expect(got && "lastRunId" in got).toBe(false);
      const explicit = new Date(T0.getTime() + 9_999);
      await store.update("u", { updatedAt: explicit, input: null });
      const again = await store.get("u");
      expect(again?.updatedAt).toEqual(explicit);
      expect(again && "input" in again).toBe(false);
      expect(await store.update("missing", { target: "x" })).toBe(false);
      expect(await store.get("missing")).toBeNull();
    });

    it("update validates the timing that results: a switch to cron must clear interval", async () => {
      const store = await fresh();
      await store.add(makeSchedule({ id: "t" }));
      await expect(store.update("t", { cron: "0 9 * * *" })).rejects.toBeInstanceOf(ScheduleValidationError);
      await expect(store.update("t", { interval: "soon" })).rejects.toBeInstanceOf(ScheduleValidationError);
      await expect(store.update("t", { enabled: "yes" as unknown as boolean })).rejects.toBeInstanceOf(ScheduleValidationError);
      expect((await store.get("t"))?.interval).toBe("5m");
      expect(await store.update("t", { interval: null, cron: "0 9 * * *", timezone: "Asia/Tokyo" })).toBe(true);
      const got = await store.get("t");
      expect([got?.interval, got?.cron, got?.timezone]).toEqual([undefined, "0 9 * * *", "Asia/Tokyo"]);
    });

    it("update of enabled and nextRunAt moves a schedule in and out of the due list", async () => {
      const store = await fresh();
      await store.add(makeSchedule({ id: "e" }));
      const due = async () => (await store.list({ due: true, enabled: true, now: T0 })).map((s) => s.id);
      expect(await due()).toEqual(["e"]);
      await store.update("e", { enabled: false });
      expect(await due()).toEqual([]);
      await store.update("e", { enabled: true, nextRunAt: new Date(T0.getTime() + 1) });
      expect(await due()).toEqual([]);
      await store.update("e", { nextRunAt: T0 });
      expect(await due()).toEqual(["e"]);
    });

    it("delete returns true, then false, and the schedule is gone from get and list", async () => {
      const store = await fresh();
      await store.add(makeSchedule({ id: "gone" }));
      await store.add(makeSchedule({ id: "kept" }));
      expect(await store.delete("gone")).toBe(true);
      expect(await store.delete("gone")).toBe(false);
      expect(await store.get("gone")).toBeNull();
      expect((await store.list({ due: true, enabled: true, now: T0 })).map((s) => s.id)).toEqual(["kept"]);
    });

    it("claimDue wins only on the exact stored nextRunAt of an enabled schedule", async () => {
      const store = await fresh();
      expect(store.claimDue).toBeTypeOf("function");
      const claim = store.claimDue!.bind(store);
      const next = new Date(T0.getTime() + 5 * MINUTE);
      await store.add(makeSchedule({ id: "c" }));
      expect(await claim("c", new Date(T0.getTime() + 1), next)).toBe(false);
      expect(await claim("c", new Date(T0.getTime() - 1), next)).toBe(false);
      expect(await claim("c", T0, next)).toBe(true);
      expect((await store.get("c"))?.nextRunAt).toEqual(next);
      expect(await claim("c", T0, new Date(next.getTime() + 5 * MINUTE))).toBe(false);
      expect((await store.get("c"))?.nextRunAt).toEqual(next);
      expect((await store.list({ due: true, enabled: true, now: T0 })).length).toBe(0);
      expect((await store.list({ due: true, enabled: true, now: next })).map((s) => s.id)).toEqual(["c"]);

      await store.add(makeSchedule({ id: "off", enabled: false }));
      expect(await claim("off", T0, next)).toBe(false);
      expect(await claim("unknown", T0, next)).toBe(false);
    });

    it("claimDue: 20 concurrent claims of one slot, exactly one wins", async () => {
      const store = await fresh();
      await store.add(makeSchedule({ id: "race" }));
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.claimDue!("race", T0, new Date(T0.getTime() + MINUTE + i))),
      );
      expect(results.filter(Boolean).length).toBe(1);
    });

    it("generateId gives distinct non-empty strings; ping is true", async () => {
      const store = await fresh();
      const ids = new Set(Array.from({ length: 1000 }, () => store.generateId()));
      expect(ids.size).toBe(1000);
      for (const id of ids) expect(id.length).toBeGreaterThan(0);
      expect(await store.ping()).toBe(true);
    });

    it("a reconciler on this store fires a due schedule once and records the run", async () => {
      const store = await fresh();
      await store.add(makeSchedule({ id: "r", input: { x: 1 } }));
      await store.add(makeSchedule({ id: "later", nextRunAt: new Date(T0.getTime() + MINUTE) }));
      const seen: Schedule[] = [];
      const reconciler = new ScheduleReconciler({ adapter: store, triggerFn: (s) => (seen.push(s), `run-${s.id}`) });
      const now = new Date(T0.getTime() + 500);
      expect(await reconciler.tick(now)).toEqual({ fired: ["r"], skipped: [], errored: [], lost: [] });
      expect(await reconciler.tick(now)).toEqual({ fired: [], skipped: [], errored: [], lost: [] });
      expect(seen.map((s) => [s.id, s.input])).toEqual([["r", { x: 1 }]]);
      const got = await store.get("r");
      expect(got).toMatchObject({ lastRunAt: now, lastRunStatus: "triggered", lastRunId: "run-r", nextRunAt: new Date(T0.getTime() + 5 * MINUTE) });
    });

    const concurrencyTitle = connectPeer
      ? "8 reconcilers on 8 connections tick concurrently over 1,000 due schedules: each fires exactly once"
      : `8 reconcilers over 1,000 due schedules (skipped: ${options.noPeerReason ?? "the store cannot be shared between connections"})`;
    it.skipIf(!connectPeer)(concurrencyTitle, { timeout: 120_000 }, async () => {
      const store = await fresh();
      const peers = [store as ScheduleAdapter, ...(await Promise.all(Array.from({ length: 7 }, () => connectPeer!(store))))];
      try {
        const total = 1000;
        const ids = Array.from({ length: total }, (_, i) => `due-${String(i).padStart(4, "0")}`);
        for (let i = 0; i < total; i += 50) {
          await Promise.all(ids.slice(i, i + 50).map((id, j) => store.add(makeSchedule({ id, nextRunAt: new Date(T0.getTime() - (i + j)) }))));
        }
        const calls = new Map<string, number>();
        const reconcilers = peers.map(
          (adapter, r) =>
            new ScheduleReconciler({
              adapter,
              concurrency: 4,
              batchSize: 100,
              triggerFn: async (s) => {
                calls.set(s.id, (calls.get(s.id) ?? 0) + 1);
                // Yield so the other reconcilers interleave with this one between claim and record.
                await new Promise((resolve) => setImmediate(resolve));
                return `r${r}`;
              },
            }),
        );
        const now = new Date(T0.getTime() + 1_000);
        const summaries = await Promise.all(reconcilers.map((r) => r.tick(now)));

        expect(calls.size).toBe(total);
        expect([...calls.values()].every((n) => n === 1)).toBe(true);
        expect(summaries.reduce((n, s) => n + s.fired.length, 0)).toBe(total);
        expect(summaries.flatMap((s) => s.errored)).toEqual([]);
        // Contention really happened: several reconcilers fired, and some lost claims.
        expect(summaries.filter((s) => s.fired.length > 0).length).toBeGreaterThan(1);
        expect(summaries.reduce((n, s) => n + s.lost.length, 0)).toBeGreaterThan(0);
        expect(await store.list({ due: true, enabled: true, now })).toEqual([]);
        const again = await Promise.all(reconcilers.map((r) => r.tick(now)));
        expect(again.reduce((n, s) => n + s.fired.length, 0)).toBe(0);
        const recorded = await store.list({ enabled: true });
        expect(recorded.every((s) => s.lastRunStatus === "triggered" && s.lastRunAt?.getTime() === now.getTime())).toBe(true);
      } finally {
        await Promise.all(peers.slice(1).map(async (peer) => peer.close?.()));
      }
    });
  });
}
