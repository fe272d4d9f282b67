import { describe, expect, it } from "vitest";
import { hasTag, normaliseTags, splitTags } from "@/lib/applets/tags";
import { listApplets, tagsInUse, type ListedApplet } from "@/lib/ui/applet-list";

describe("applet tags", () => {
  it("tags are trimmed, inner spaces made one, kept once without case (the first spelling)", () => {
    expect(normaliseTags(["  Work ", "work", "home  office", "", "finance/receipts"])).toEqual({ ok: true, tags: ["Work", "home office", "finance/receipts"] });
    expect(normaliseTags(undefined)).toEqual({ ok: true, tags: [] });
    expect(splitTags("work, home ,, ops")).toEqual(["work", "home", "ops"]);
  });

  it("a bad tag is refused in words: too long, odd characters, too many, not text", () => {
    expect(normaliseTags(["x".repeat(33)])).toMatchObject({ ok: false, message: expect.stringContaining("longer than 32") });
    expect(normaliseTags(["a<b>"])).toEqual({ ok: false, message: 'the tag "a<b>" may only hold letters, digits, spaces and - _ . / :' });
    expect(normaliseTags(Array.from({ length: 13 }, (_, i) => `t${i}`))).toEqual({ ok: false, message: "at most 12 tags (got 13)" });
    expect(normaliseTags([1])).toEqual({ ok: false, message: "each tag must be text" });
    expect(normaliseTags("work")).toEqual({ ok: false, message: "tags must be a list of words" });
  });

  it("the applets list filters by a tag without case; tagsInUse lists each tag once", () => {
    const base = { enabled: true, triggerType: "webhook", createdAt: "2026-01-01T00:00:00.000Z", lastStatus: null, lastAt: null, triggerError: null };
    const all: ListedApplet[] = [
      { ...base, id: "1", name: "A", tags: ["Work"] },
      { ...base, id: "2", name: "B", tags: ["home", "work"] },
      { ...base, id: "3", name: "C" },
    ];
    expect(listApplets(all, { tag: "work" }).items.map((a) => a.id)).toEqual(["1", "2"]);
    expect(listApplets(all, { tag: "HOME" }).items.map((a) => a.id)).toEqual(["2"]);
    expect(listApplets(all, {}).items).toHaveLength(3);
    expect(tagsInUse(all)).toEqual(["home", "Work"]);
    expect(hasTag(["Finance"], "finance")).toBe(true);
  });
});
