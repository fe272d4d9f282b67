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
    cpu += 15; // a little work (under 2 % of a core) is still quiet
    vi.advanceTimersByTime(1000);
    expect(gc).toHaveBeenCalledTimes(2);
    expect(q.collections()).toBe(2);
    q.stop();
    young = 32;
    vi.advanceTimersByTime(10_000);
    expect(gc).toHaveBeenCalledTimes(2);
  });

  test("a young generation that V8 keeps large is collected a few times in a quiet stretch, not again and again", () => {
    vi.useFakeTimers();
    let cpu = 0;
    const gc = vi.fn();
    const q = collectWhenQuiet({ windowMs: 1000, gc, cpuMs: () => cpu, youngMb: () => 16 });
    vi.advanceTimersByTime(60_000);
    expect(gc).toHaveBeenCalledTimes(4);
    cpu += 5000; // a busy window starts a new stretch
    vi.advanceTimersByTime(1000);
    vi.advanceTimersByTime(60_000);
    expect(gc).toHaveBeenCalledTimes(8);
    q.stop();
    const atRest = vi.fn();
    const r = collectWhenQuiet({ windowMs: 1000, gc: atRest, cpuMs: () => 0, youngMb: () => 4 });
    vi.advanceTimersByTime(10_000);
    expect(atRest).not.toHaveBeenCalled();
    r.stop();
  });

  test("collections go on in the quiet windows until the young generation is back at rest, as V8 shrinks it only once the quiet shows in its samples", () => {
    vi.useFakeTimers();
    let young = 32;
    let calls = 0;
    const gc = vi.fn(() => {
      calls++;
      if (calls === 2) young = 1; // the first collection after a busy stretch leaves it as it is
    });
    const q = collectWhenQuiet({ windowMs: 1000, gc, cpuMs: () => 0, youngMb: () => young });
    vi.advanceTimersByTime(1000);
    expect(gc).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1000);
    expect(gc).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(10_000);
    expect(gc).toHaveBeenCalledTimes(2);
    q.stop();
  });

  // Node 20's V8 reads gc({ type: "major" }) as a minor collection (a scavenge, seen with --trace-gc),
  // which gives nothing back and never starts V8's memory reducer.
  test("fullGc() runs a major collection and nothing else, without a global gc for the rest of the process", async () => {
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
    expect(kinds[0]).toBe(constants.NODE_PERFORMANCE_GC_MAJOR);
    expect(kinds).not.toContain(constants.NODE_PERFORMANCE_GC_MINOR);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
