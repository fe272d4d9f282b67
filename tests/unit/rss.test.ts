import { readFileSync } from "node:fs";
import path from "node:path";
import { http, HttpResponse } from "msw";
import { describe, expect, test } from "vitest";
import { ManualClock } from "@/lib/core/clock";
import { loadConfig } from "@/lib/core/config";
import { silentLogger } from "@/lib/core/log";
import { emptyTriggerState } from "@/lib/triggers/types";
import { feedItems, itemKey, parseFeed, rssConfigSchema, rssTrigger, selectNewItems, type FeedItem } from "@/lib/triggers/rss";
import type { PollContext } from "@/lib/triggers/types";
import { makeTempDir } from "../helpers/action-context";
import { testFetch } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";

useHttpMocks();

const feed = (name: string) => readFileSync(path.resolve(__dirname, "../../fixtures/feeds", name), "utf8");

const ctx = (): PollContext => ({
  http: testFetch(),
  clock: new ManualClock("2026-03-08T10:00:00.000Z"),
  log: silentLogger,
  config: loadConfig({ DATA_DIR: makeTempDir() }),
  render: async (t) => t,
  redact: (v) => v,
});

const LAUGHS = `<?xml version="1.0"?>
<!DOCTYPE rss [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rss version="2.0"><channel><title>&lol9;</title><item><title>&lol9;</title><guid>laugh-1</guid></item></channel></rss>`;

const PROTO = `<?xml version="1.0"?>
<rss version="2.0"><channel><title>Proto</title>
<item><title>Innocent</title><guid>proto-1</guid><link>https://example.com/a</link>
<__proto__><polluted>yes</polluted><isAdmin>true</isAdmin></__proto__>
<constructor><prototype><polluted>yes</polluted></prototype></constructor>
</item></channel></rss>`;

describe("AC4: parsing feeds", () => {
  test("AC4: a billion-laughs DOCTYPE is not expanded: the feed is refused quickly and memory stays flat", async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    // Twice: a failed document must not leave the parser half-reset for the next feed.
    await expect(parseFeed(LAUGHS)).rejects.toThrow(/entity/i);
    await expect(parseFeed(LAUGHS)).rejects.toThrow(/entity/i);
    expect(performance.now() - started).toBeLessThan(1000);
    expect((await parseFeed(feed("rss.xml"))).items).toHaveLength(5);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(50 * 1024 * 1024);
  });

  test("AC4: a billion-laughs feed polled becomes last_error and no event", async () => {
    server.use(http.get("https://feeds.example/laughs.xml", () => new HttpResponse(LAUGHS, { headers: { "content-type": "application/rss+xml" } })));
    const r = await rssTrigger.poll(rssConfigSchema.parse({ url: "https://feeds.example/laughs.xml", fire_on_first_poll: true }), emptyTriggerState(), ctx(), new Date());
    expect(r.events).toEqual([]);
    expect(r.state).toMatchObject({ errorCount: 1, lastError: expect.stringMatching(/not a readable feed: .*entities/) });
  });

  test("AC4: an item with a <__proto__> element pollutes no prototype and keeps its fields", async () => {
    const parsed = await parseFeed(PROTO);
    const [item] = feedItems(parsed, "https://example.com/feed.xml");
    expect(item!.key).toBe("proto-1");
    expect(item!.payload).toMatchObject({ title: "Innocent", link: "https://example.com/a" });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(Object.getPrototypeOf(item!.payload)).toBe(Object.prototype);
    expect(Object.keys(parsed.items[0]!)).not.toContain("__proto__");
  });

  test("AC4: item keys fall back guid → id → link → SHA-256 of title + published", () => {
    expect(itemKey({ guid: "g", id: "i", link: "l" })).toBe("g");
    expect(itemKey({ id: "i", link: "l" })).toBe("i");
    expect(itemKey({ guid: " ", link: "l" })).toBe("l");
    const hashed = itemKey({ title: "T", isoDate: "2026-03-07T00:00:00.000Z" });
    expect(hashed).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(itemKey({ title: "T", isoDate: "2026-03-07T00:00:00.000Z" })).toBe(hashed);
    expect(itemKey({ title: "T", isoDate: "2026-03-08T00:00:00.000Z" })).not.toBe(hashed);
  });

  test("AC4: the fixtures parse to five (RSS, Atom) and three (no GUID) items with dates over three days", async () => {
    const rss = feedItems(await parseFeed(feed("rss.xml")), "u");
    const atom = feedItems(await parseFeed(feed("atom.xml")), "u");
    const noGuid = feedItems(await parseFeed(feed("rss-no-guid.xml")), "u");
    expect(rss.map((i) => i.key)).toEqual(["field-notes-0005", "field-notes-0004", "field-notes-0003", "field-notes-0002", "field-notes-0001"]);
    expect(atom).toHaveLength(5);
    expect(atom.every((i) => i.key.startsWith("tag:releases.example.org,"))).toBe(true);
    expect(noGuid.map((i) => i.key)).toEqual(["https://council.example.net/notices/mill-lane-closure", "https://council.example.net/notices/library-hours", "https://council.example.net/notices/recycling"]);
    for (const items of [rss, atom, noGuid]) {
      const days = new Set(items.map((i) => (i.payload.published_at as string).slice(0, 10)));
      expect(days.size).toBe(3);
    }
  });
});

describe("AC4: choosing new items", () => {
  const item = (key: string, published: string | null): FeedItem => ({ key, published: published ? new Date(published) : null, payload: { title: key } });

  test("AC4: the first poll remembers every key and fires nothing (unless fire_on_first_poll)", () => {
    const items = [item("c", "2026-03-07T00:00:00Z"), item("b", "2026-03-06T00:00:00Z"), item("a", "2026-03-05T00:00:00Z")];
    expect(selectNewItems(items, [], { fireOnFirstPoll: false, maxItems: 20 })).toEqual({ fire: [], seenKeys: ["a", "b", "c"], dropped: 0 });
    expect(selectNewItems(items, [], { fireOnFirstPoll: true, maxItems: 20 }).fire.map((i) => i.key)).toEqual(["a", "b", "c"]);
  });

  test("AC4: new items fire oldest first by date, whatever the feed order; without dates, in reverse feed order", () => {
    const dated = [item("x", "2026-03-06T00:00:00Z"), item("y", "2026-03-07T00:00:00Z"), item("old", "2026-03-01T00:00:00Z")];
    expect(selectNewItems(dated, ["old"], { fireOnFirstPoll: false, maxItems: 20 }).fire.map((i) => i.key)).toEqual(["x", "y"]);
    const undated = [item("n2", null), item("n1", "2026-03-07T00:00:00Z"), item("old", null)];
    expect(selectNewItems(undated, ["old"], { fireOnFirstPoll: false, maxItems: 20 }).fire.map((i) => i.key)).toEqual(["n1", "n2"]);
  });

  // Changes this rule: the 500 cap applies to the history, not to what the feed shows now.
  test("AC4: seen keys are the feed's keys plus the newest 500 of the history, newest last", () => {
    const seen = Array.from({ length: 600 }, (_, i) => `k${i}`);
    const r = selectNewItems([item("new2", "2026-03-07T00:00:00Z"), item("new1", "2026-03-06T00:00:00Z"), item("k599", "2026-03-01T00:00:00Z")], seen, { fireOnFirstPoll: false, maxItems: 20 });
    expect(r.fire.map((i) => i.key)).toEqual(["new1", "new2"]);
    expect(r.seenKeys).toHaveLength(503);
    expect(r.seenKeys.slice(0, 2)).toEqual(["k99", "k100"]);
    expect(r.seenKeys.slice(-3)).toEqual(["k599", "new1", "new2"]);
  });

  test("AC4: a key repeated within one feed fires once", () => {
    const r = selectNewItems([item("dup", "2026-03-07T00:00:00Z"), item("dup", "2026-03-07T00:00:00Z")], ["old"], { fireOnFirstPoll: false, maxItems: 20 });
    expect(r.fire.map((i) => i.key)).toEqual(["dup"]);
  });
});

describe("AC4: config and preview", () => {
  test("AC4: defaults, and the interval floor of 5 minutes", () => {
    expect(rssConfigSchema.parse({ url: "https://feeds.example/a.xml" })).toEqual({ url: "https://feeds.example/a.xml", interval_min: 15, fire_on_first_poll: false, max_items_per_poll: 20 });
    expect(rssConfigSchema.safeParse({ url: "https://feeds.example/a.xml", interval_min: 4 }).success).toBe(false);
    expect(rssConfigSchema.safeParse({ url: "https://feeds.example/a.xml", max_items_per_poll: 101 }).success).toBe(false);
    expect(rssConfigSchema.safeParse({ url: "file:///etc/passwd" }).success).toBe(false);
  });

  test("AC4: Fetch now returns the feed title and the first three items", async () => {
    server.use(http.get("https://feeds.example/preview.xml", () => new HttpResponse(feed("rss.xml"), { headers: { "content-type": "application/rss+xml" } })));
    const r = (await rssTrigger.preview!(rssConfigSchema.parse({ url: "https://feeds.example/preview.xml" }), ctx())) as { feed_title: string; item_count: number; items: { key: string; title: string }[] };
    expect(r.feed_title).toBe("Field Notes");
    expect(r.item_count).toBe(5);
    expect(r.items.map((i) => i.key)).toEqual(["field-notes-0005", "field-notes-0004", "field-notes-0003"]);
  });
});
