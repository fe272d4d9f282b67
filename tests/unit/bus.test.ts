import { afterEach, describe, expect, test } from "vitest";
import { Bus, type BusMessage } from "@/lib/bus";
import { publishRunUpdates } from "@/lib/bus/poll";
import { newId } from "@/lib/core/ids";
import { createTestApp, webhookToHttp, type TestApp } from "../helpers/db";
import { sqliteOf } from "@/lib/db/store/sqlite";

describe("SSE bus", () => {
  test("Last-Event-ID replays what a client missed, oldest first, while the ring still holds it", () => {
    const bus = new Bus(3);
    for (let i = 1; i <= 5; i++) bus.publish({ type: "run.updated", run_id: `r${i}`, applet_id: "a", status: "queued" });
    expect(bus.since(3).map((m) => m.run_id)).toEqual(["r4", "r5"]);
    // Only the last 3 are kept.
    expect(bus.since(0).map((m) => m.seq)).toEqual([3, 4, 5]);
    expect(bus.since(5)).toEqual([]);
  });

  test("a run at a version already published is published once, whoever publishes first; a new version or no version is always published", () => {
    const bus = new Bus();
    expect(bus.publish({ type: "run.queued", run_id: "x", applet_id: "a", status: "queued" }, "t1")).not.toBeNull();
    expect(bus.publish({ type: "run.updated", run_id: "x", applet_id: "a", status: "queued" }, "t1")).toBeNull();
    expect(bus.publish({ type: "run.updated", run_id: "y", applet_id: "a", status: "queued" }, "t1")).not.toBeNull();
    expect(bus.publish({ type: "run.queued", run_id: "y", applet_id: "a", status: "queued" }, "t1")).toBeNull();
    expect(bus.publish({ type: "run.updated", run_id: "x", applet_id: "a", status: "running" }, "t2")).not.toBeNull();
    expect(bus.publish({ type: "run.updated", run_id: "x", applet_id: "a", status: "running" })).not.toBeNull();
    expect(bus.since(0).map((m) => [m.run_id, m.status])).toEqual([
      ["x", "queued"],
      ["y", "queued"],
      ["x", "running"],
      ["x", "running"],
    ]);
  });

  test("the versions remembered are bounded: the most recent runs' are kept, the oldest forgotten", () => {
    const bus = new Bus(10);
    const publish = (i: number) => bus.publish({ type: "run.queued", run_id: `r${i}`, applet_id: "a", status: "queued" }, "v");
    for (let i = 0; i < 25_000; i++) publish(i);
    expect(publish(24_999)).toBeNull();
    expect(publish(15_000)).toBeNull();
    // Forgotten: published again (at worst a stream hears of a run twice, never not at all).
    expect(publish(0)).not.toBeNull();
  });

  test("subscribers get each message once, and unsubscribe stops them", () => {
    const bus = new Bus();
    const got: string[] = [];
    const off = bus.subscribe((m) => got.push(m.run_id));
    bus.publish({ type: "run.queued", run_id: "x", applet_id: "a", status: "queued" });
    off();
    bus.publish({ type: "run.queued", run_id: "y", applet_id: "a", status: "queued" });
    expect(got).toEqual(["x"]);
  });
});

describe("ids", () => {
  test("UUIDv7 ids are valid UUIDs and sort in creation order, also within one millisecond", () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    for (const id of ids.slice(0, 50)) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("SSE feeder: run changes from the worker reach the bus once each", () => {
  const apps: TestApp[] = [];
  afterEach(() => apps.splice(0).forEach((a) => a.cleanup()));

  async function setup() {
    const app = createTestApp({ start: "2026-03-07T12:00:00.000Z" });
    apps.push(app);
    const applet = await app.applets.create({ name: "fed", definition: webhookToHttp("https://status.test/status/200") });
    const published: BusMessage[] = [];
    app.bus.subscribe((m) => {
      if (m.type === "run.updated") published.push(m);
    });
    // A run as the worker (another process, another clock) leaves it: status and updated_at set directly.
    const touch = (runId: string, status: string, updatedAt: string) =>
      sqliteOf(app.store).prepare("UPDATE runs SET status = ?, updated_at = ? WHERE id = ?").run(status, updatedAt, runId);
    const newRun = async () => (await app.applets.test(applet.id, { body: {} })).runId;
    return { app, published, touch, newRun };
  }

  test("a run updated in the same millisecond as the last one seen, but committed after the read, is published", async () => {
    const { app, published, touch, newRun } = await setup();
    const a = await newRun();
    const b = await newRun();
    const feed = publishRunUpdates(app);
    touch(a, "running", "2026-03-07T12:00:01.000Z");
    await feed();
    expect(published.map((m) => [m.run_id, m.status])).toEqual([[a, "running"]]);
    touch(b, "running", "2026-03-07T12:00:01.000Z");
    await feed();
    expect(published.map((m) => [m.run_id, m.status])).toEqual([
      [a, "running"],
      [b, "running"],
    ]);
  });

  test("a run stamped slightly earlier (a worker whose clock lags) is published; nothing is published twice", async () => {
    const { app, published, touch, newRun } = await setup();
    const a = await newRun();
    const b = await newRun();
    const feed = publishRunUpdates(app);
    touch(a, "succeeded", "2026-03-07T12:00:05.000Z");
    await feed();
    touch(b, "failed", "2026-03-07T12:00:04.200Z");
    await feed();
    await feed();
    expect(published.map((m) => [m.run_id, m.status])).toEqual([
      [a, "succeeded"],
      [b, "failed"],
    ]);
    // A later change of the same run is a new change.
    touch(a, "queued", "2026-03-07T12:00:06.000Z");
    await feed();
    expect(published.map((m) => [m.run_id, m.status]).slice(2)).toEqual([[a, "queued"]]);
  });

  test("a run the ingress announced as it stored it (run.queued) is not announced again by the feed with the same status; its next change is", async () => {
    const { app, touch, newRun } = await setup();
    const all: BusMessage[] = [];
    app.bus.subscribe((m) => all.push(m));
    const feed = publishRunUpdates(app);
    await feed();
    const a = await newRun();
    await feed();
    await feed();
    // Before: run.queued from the ingress, then run.updated with status queued from the feed.
    expect(all.map((m) => [m.type, m.run_id, m.status])).toEqual([["run.queued", a, "queued"]]);
    touch(a, "running", "2026-03-07T12:00:01.000Z");
    await feed();
    expect(all.map((m) => [m.type, m.status]).slice(1)).toEqual([["run.updated", "running"]]);
  });

  test("more changes than one page in the overlap window are each published once, and the seen set stays bounded", async () => {
    const { app, published, touch, newRun } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 1200; i++) ids.push(await newRun());
    const feed = publishRunUpdates(app);
    sqliteOf(app.store).transaction(() => ids.forEach((id) => touch(id, "running", "2026-03-07T12:00:01.000Z")))();
    await feed();
    expect(published).toHaveLength(1200);
    expect(new Set(published.map((m) => m.run_id)).size).toBe(1200);
    await feed();
    expect(published).toHaveLength(1200);
    // Once the window has moved past them, the remembered keys are dropped.
    app.clock.set("2026-03-07T12:01:00.000Z");
    touch(ids[0]!, "succeeded", "2026-03-07T12:01:00.000Z");
    await feed();
    expect(published).toHaveLength(1201);
    expect(feed.remembered()).toBeLessThanOrEqual(1);
  });

  test("the live-view feed yields to the event loop between pages, so webhooks are answered while it reads a burst", async () => {
    const { app, published, touch, newRun } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 1600; i++) ids.push(await newRun());
    const feed = publishRunUpdates(app);
    sqliteOf(app.store).transaction(() => ids.forEach((id) => touch(id, "running", "2026-03-07T12:00:01.000Z")))();
    // What another request on this event loop would see if it ran in the middle of the look.
    const seenMidway: number[] = [];
    const probe = () => {
      seenMidway.push(published.length);
      if (published.length < 1600 && seenMidway.length < 100) setImmediate(probe);
    };
    setImmediate(probe);
    await feed();
    expect(published).toHaveLength(1600);
    // The probe ran while some, but not all, pages were published: the look did not hold the loop.
    expect(seenMidway.some((n) => n > 0 && n < 1600)).toBe(true);
  });

  test("with no SSE stream open the feed reads nothing; a stream opened later gets the changes from then on", async () => {
    const app = createTestApp({ start: "2026-03-07T12:00:00.000Z" });
    apps.push(app);
    const applet = await app.applets.create({ name: "unwatched", definition: webhookToHttp("https://status.test/status/200") });
    const touch = (runId: string, status: string, updatedAt: string) =>
      sqliteOf(app.store).prepare("UPDATE runs SET status = ?, updated_at = ? WHERE id = ?").run(status, updatedAt, runId);
    const a = (await app.applets.test(applet.id, { body: {} })).runId;
    const feed = publishRunUpdates(app);
    let reads = 0;
    const changedAfter = app.store.runs.changedAfter;
    app.store.runs.changedAfter = (...args) => {
      reads++;
      return changedAfter(...args);
    };
    touch(a, "running", "2026-03-07T12:00:01.000Z");
    app.clock.set("2026-03-07T12:00:02.000Z");
    await feed();
    expect(reads).toBe(0);
    expect(feed.remembered()).toBe(0);

    const published: BusMessage[] = [];
    app.bus.subscribe((m) => published.push(m));
    app.clock.set("2026-03-07T12:00:10.000Z");
    touch(a, "succeeded", "2026-03-07T12:00:10.000Z");
    await feed();
    expect(reads).toBeGreaterThan(0);
    expect(published.map((m) => [m.run_id, m.status])).toEqual([[a, "succeeded"]]);
  });
});
