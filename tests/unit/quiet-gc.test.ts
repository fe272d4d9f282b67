import { PerformanceObserver, constants } from "node:perf_hooks";
import { afterEach, describe, expect, test, vi } from "vitest";
import { collectWhenQuiet, fullGc } from "@/lib/core/quiet-gc";

afterEach(() => {
  vi.useRealTimers();
});

describe("quiet GC: the young generation given back when the process goes quiet", () => {
  test("collects in a quiet window when the young generation has grown, never while busy, and not again while it stays as it is", () => {
    vi.useFakeTimers();
    let cpu = 0;
    let young = 32; // MB: what Next's start-up leaves
    const gc = vi.fn(() => {
      cpu += 30; // the collection's own CPU time must not count as work
      young = 5;
    });
    const q = collectWhenQuiet({ windowMs: 1000, gc, cpuMs: () => cpu, youngMb: () => young });
    cpu += 500; // start-up still running
    vi.advanceTimersByTime(1000);
    expect(gc).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1000); // the first quiet window
    expect(gc).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(10_000); // quiet goes on, the young generation at rest
    expect(gc).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 5; i++) {
      cpu += 800; // a busy stretch grows it again
      young = 32;
      vi.advanceTimersByTime(1000);
    }
    expect(gc).toHaveBeenCalledTimes(1);
    cpu += 40; // a little work is still quiet
    vi.advanceTimersByTime(1000);
    expect(gc).toHaveBeenCalledTimes(2);
    expect(q.collections()).toBe(2);
    q.stop();
    young = 32;
    vi.advanceTimersByTime(10_000);
    expect(gc).toHaveBeenCalledTimes(2);
  });

  test("a young generation that V8 keeps large after a collection is not collected again and again", () => {
    vi.useFakeTimers();
    const gc = vi.fn();
    const q = collectWhenQuiet({ windowMs: 1000, gc, cpuMs: () => 0, youngMb: () => 16 });
    vi.advanceTimersByTime(10_000);
    expect(gc).toHaveBeenCalledTimes(1);
    q.stop();
    const atRest = vi.fn();
    const r = collectWhenQuiet({ windowMs: 1000, gc: atRest, cpuMs: () => 0, youngMb: () => 4 });
    vi.advanceTimersByTime(10_000);
    expect(atRest).not.toHaveBeenCalled();
    r.stop();
  });

  test("fullGc() runs a major collection, without a global gc for the rest of the process", async () => {
    const kinds: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) kinds.push((e as unknown as { detail: { kind: number } }).detail.kind);
    });
    observer.observe({ entryTypes: ["gc"] });
    const gc = fullGc();
    expect(gc).not.toBeNull();
    gc!();
    await new Promise((r) => setTimeout(r, 50));
    observer.disconnect();
    expect(kinds).toContain(constants.NODE_PERFORMANCE_GC_MAJOR);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
