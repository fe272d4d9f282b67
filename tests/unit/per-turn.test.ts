import { describe, expect, it } from "vitest";
import { perTurn, turnBarrier } from "@/lib/core/per-turn";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("perTurn", () => {
  it("reads once per turn of the event loop and again in the next", async () => {
    let reads = 0;
    const value = perTurn(() => ++reads);
    expect([value.get(), value.get(), value.get()]).toEqual([1, 1, 1]);
    await nextTurn();
    expect(value.get()).toBe(2);
    value.forget();
    expect(value.get()).toBe(3);
  });
});

describe("turnBarrier", () => {
  it("lets the callers of one turn resume together, after the turn's I/O, in the order they came", async () => {
    const together = turnBarrier();
    const order: string[] = [];
    const a = together().then(() => order.push("a"));
    const b = together().then(() => order.push("b"));
    // Not before the turn's check phase: a microtask queued now runs first.
    await Promise.resolve();
    order.push("microtask");
    await Promise.all([a, b]);
    expect(order).toEqual(["microtask", "a", "b"]);
  });

  it("shares one point per turn, and a caller of the next turn waits for that turn's", async () => {
    const together = turnBarrier();
    const first = together();
    expect(together()).toBe(first);
    await first;
    const second = together();
    expect(second).not.toBe(first);
    let done = false;
    void second.then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    await second;
    expect(done).toBe(true);
  });
});
