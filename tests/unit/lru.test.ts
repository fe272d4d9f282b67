import { describe, expect, test } from "vitest";
import { Lru } from "@/lib/core/lru";

describe("Lru", () => {
  test("keeps at most max entries, forgetting the least recently used", () => {
    const c = new Lru<string, number>(3);
    c.set("a", 1).set("b", 2).set("c", 3);
    expect(c.get("a")).toBe(1); // a is now the newest: b is the oldest
    c.set("d", 4);
    expect(c.size).toBe(3);
    expect(c.get("b")).toBeUndefined();
    expect([c.get("a"), c.get("c"), c.get("d")]).toEqual([1, 3, 4]);
  });

  test("setting a known key replaces its value and makes it the newest, without evicting", () => {
    const c = new Lru<string, number>(2);
    c.set("a", 1).set("b", 2).set("a", 10);
    expect(c.size).toBe(2);
    c.set("c", 3);
    expect(c.get("b")).toBeUndefined();
    expect(c.get("a")).toBe(10);
  });

  test("a hit on the newest key keeps the order; delete and clear forget", () => {
    const c = new Lru<string, number>(2);
    c.set("a", 1).set("b", 2);
    expect(c.get("b")).toBe(2);
    expect(c.get("b")).toBe(2);
    c.set("c", 3);
    expect(c.get("a")).toBeUndefined();
    expect(c.delete("c")).toBe(true);
    expect(c.get("c")).toBeUndefined();
    c.set("d", 4);
    expect(c.size).toBe(2);
    c.clear();
    expect(c.size).toBe(0);
    expect(c.get("b")).toBeUndefined();
  });

  test("after many evictions it still holds exactly the newest entries, in order of use", () => {
    const c = new Lru<number, number>(3);
    for (let i = 0; i < 10_000; i++) c.set(i, i);
    expect(c.size).toBe(3);
    expect(c.get(9_996)).toBeUndefined();
    expect(c.get(9_997)).toBe(9_997);
    c.set(10_000, 10_000);
    expect([c.get(9_998), c.get(9_997), c.get(10_000)]).toEqual([undefined, 9_997, 10_000]);
  });

  test("a size of less than one entry is refused, naming it", () => {
    expect(() => new Lru(0)).toThrow(/max must be a whole number of at least 1, got 0/);
    expect(() => new Lru(1.5)).toThrow(/max/);
  });
});
