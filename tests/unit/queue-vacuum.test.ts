import { afterEach, beforeEach, expect, test } from "vitest";
import { createQueueVacuum } from "@/lib/queue/vacuum";
import { createTestApp, type TestApp } from "../helpers/db";

/** The workers' queue vacuum job (lib/queue/vacuum.ts) over a store whose vacuum is counted; real job locks on SQLite. */
let app: TestApp;
beforeEach(() => {
  app = createTestApp();
});
afterEach(async () => {
  await app.cleanup();
});

test("no job where the store has no queue vacuum (SQLite)", () => {
  expect(app.store.maintenance.vacuumQueue).toBeUndefined();
  expect(createQueueVacuum(app, "w1")).toBeNull();
});

test("a vacuum that took 100 ms is followed by at least 1.9 s without one (at most 5 % of a core), and only one worker vacuums while another holds the lock", async () => {
  const calls: number[] = [];
  let release: (() => void) | null = null;
  app.store.maintenance.vacuumQueue = async ({ minChanges }) => {
    calls.push(minChanges);
    if (calls.length === 3) await new Promise<void>((r) => (release = r));
    return { vacuumed: true, ms: 100 };
  };
  const tick = createQueueVacuum(app, "w1")!;
  expect(await tick()).toEqual({ ran: true, vacuumed: true, ms: 100 });
  app.clock.advance(1_800);
  expect(await tick()).toEqual({ ran: false, vacuumed: false, ms: 0 });
  app.clock.advance(100);
  expect(await tick()).toEqual({ ran: true, vacuumed: true, ms: 100 });
  expect(calls).toEqual([1_000, 1_000]);
  // A second worker's job while the first one's vacuum is in flight: the lock is taken, it skips.
  app.clock.advance(2_000);
  const inFlight = tick();
  await new Promise((r) => setTimeout(r, 20));
  const other = createQueueVacuum(app, "w2")!;
  expect(await other()).toEqual({ ran: false, vacuumed: false, ms: 0 });
  release!();
  expect(await inFlight).toEqual({ ran: true, vacuumed: true, ms: 100 });
  expect(calls).toHaveLength(3);
});
