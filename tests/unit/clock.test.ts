import { afterEach, describe, expect, test } from "vitest";
import { nowMs, systemClock } from "@/lib/core/clock";
import { newId } from "@/lib/core/ids";

/**
 * Next.js replaces the global Date once it prepares (its node-environment extensions: every
 * `new Date()` and `Date.now()` then asks whether a prerender reads the clock). The web process's
 * clock and ids keep the runtime's own Date, taken when lib/core/clock loads.
 */
const RealDate = Date;
afterEach(() => {
  globalThis.Date = RealDate;
});

describe("the system clock after the global Date is replaced", () => {
  test("systemClock.now, nowMs and newId do not call the replacement", () => {
    let calls = 0;
    const Counting = function (this: unknown, ...args: unknown[]) {
      calls++;
      return Reflect.construct(RealDate, args, new.target ?? RealDate);
    } as unknown as DateConstructor;
    Object.defineProperties(Counting, Object.getOwnPropertyDescriptors(RealDate));
    Counting.now = () => {
      calls++;
      return RealDate.now();
    };
    globalThis.Date = Counting;

    const before = RealDate.now();
    const now = systemClock.now();
    const ms = nowMs();
    const id = newId();
    expect(calls).toBe(0);
    expect(now).toBeInstanceOf(RealDate);
    expect(now.getTime()).toBeGreaterThanOrEqual(before);
    expect(ms).toBeGreaterThanOrEqual(before);
    // UUIDv7: its first 48 bits are the milliseconds.
    expect(parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBeGreaterThanOrEqual(before);
  });
});
