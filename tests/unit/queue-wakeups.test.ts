import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { silentLogger } from "@/lib/core/log";
import { startQueueWakeups } from "@/lib/queue/wakeups";

/**
 * A worker's say in whether claimable runs are announced (lib/queue/wakeups.ts), over a store whose
 * calls are recorded; the database side (the row, the triggers, the wait for transactions in
 * progress) is tests/integration/postgres-queue.test.ts.
 */
let calls: string[];
let failWatch: boolean;
let wakes: number;
let heard: (() => void) | null;
const notifications = {
  onQueued: (fn: () => void) => {
    heard = fn;
    return () => void (heard = null);
  },
  watchQueue: async (id: string, forMs: number, opts?: { settle?: boolean }) => {
    calls.push(`watch ${id} ${forMs} ${opts?.settle ? "settle" : "renew"}`);
    if (failWatch) throw new Error("disk full");
  },
  unwatchQueue: async (id: string) => void calls.push(`unwatch ${id}`),
};
const start = () => startQueueWakeups({ notifications, workerId: "w1", wake: () => wakes++, log: silentLogger, forMs: 60_000, renewMs: 20_000, busyAfterMs: 1_000, retryMs: 1_000 });

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  calls = [];
  failWatch = false;
  wakes = 0;
  heard = null;
});
afterEach(() => {
  vi.useRealTimers();
});

test("an idle slot puts the worker's row in (waiting for the transactions in progress) and the slots look again; announcements wake them", async () => {
  const w = start();
  expect(calls).toEqual([]);
  w.idle();
  await vi.advanceTimersByTimeAsync(0);
  expect(calls).toEqual(["watch w1 60000 settle"]);
  expect(wakes).toBe(1);
  heard!();
  expect(wakes).toBe(2);
  // Still idle: renewed before it runs out, without the wait.
  await vi.advanceTimersByTimeAsync(20_000);
  expect(calls).toEqual(["watch w1 60000 settle", "watch w1 60000 renew"]);
  await w.stop();
  expect(calls.at(-1)).toBe("unwatch w1");
  expect(heard).toBeNull();
});

test("busy for a second withdraws the row; a busy spell shorter than that between two idle moments keeps it", async () => {
  const w = start();
  w.idle();
  await vi.advanceTimersByTimeAsync(0);
  w.busy();
  await vi.advanceTimersByTimeAsync(500);
  w.idle();
  await vi.advanceTimersByTimeAsync(5_000);
  expect(calls).toEqual(["watch w1 60000 settle"]);
  w.busy();
  await vi.advanceTimersByTimeAsync(999);
  expect(calls).toEqual(["watch w1 60000 settle"]);
  await vi.advanceTimersByTimeAsync(1);
  expect(calls).toEqual(["watch w1 60000 settle", "unwatch w1"]);
  // Busy on: no renewal, nothing more.
  await vi.advanceTimersByTimeAsync(60_000);
  expect(calls).toHaveLength(2);
  // Idle again: the row goes back in with the wait, and the slots look again.
  w.idle();
  await vi.advanceTimersByTimeAsync(0);
  expect(calls.at(-1)).toBe("watch w1 60000 settle");
  expect(wakes).toBe(2);
  await w.stop();
});

test("a database that refuses the row is tried again every second while a slot is idle, and the next success waits for the transactions again", async () => {
  failWatch = true;
  const w = start();
  w.idle();
  await vi.advanceTimersByTimeAsync(0);
  await vi.advanceTimersByTimeAsync(1_000);
  expect(calls).toEqual(["watch w1 60000 settle", "watch w1 60000 settle"]);
  expect(wakes).toBe(0);
  failWatch = false;
  await vi.advanceTimersByTimeAsync(1_000);
  expect(calls).toHaveLength(3);
  expect(wakes).toBe(1);
  // Stopped with the row in: it is withdrawn, and no timer is left behind.
  await w.stop();
  expect(calls.at(-1)).toBe("unwatch w1");
  await vi.advanceTimersByTimeAsync(60_000);
  expect(calls).toHaveLength(4);
});
