import { describe, expect, test } from "vitest";
import { Bus } from "@/lib/bus";
import { newId } from "@/lib/core/ids";

describe("SSE bus", () => {
  test("Last-Event-ID replays what a client missed, oldest first, while the ring still holds it", () => {
    const bus = new Bus(3);
    for (let i = 1; i <= 5; i++) bus.publish({ type: "run.updated", run_id: `r${i}`, applet_id: "a", status: "queued" });
    expect(bus.since(3).map((m) => m.run_id)).toEqual(["r4", "r5"]);
    // Only the last 3 are kept.
    expect(bus.since(0).map((m) => m.seq)).toEqual([3, 4, 5]);
    expect(bus.since(5)).toEqual([]);
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
