import iconv from "iconv-lite";
import { http, HttpResponse } from "msw";
import { afterAll, describe, expect, test } from "vitest";
import { ManualClock } from "@/lib/core/clock";
import { loadConfig } from "@/lib/core/config";
import { parseDateText } from "@/lib/core/dates";
import { silentLogger, type Logger } from "@/lib/core/log";
import { emptyTriggerState } from "@/lib/triggers/types";
import { stripHtml } from "@/lib/template/filters";
import { feedItems, parseFeed, rssConfigSchema, rssTrigger } from "@/lib/triggers/rss";
import type { PollContext, TriggerState } from "@/lib/triggers/types";
import { makeTempDir } from "../helpers/action-context";
import { createTestApp, testFetch } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";

/** Feeds as the world writes them. Each test is named after a defect the issue lists. */

useHttpMocks();

function captureLog(): { log: Logger; warnings: { message: string; fields?: Record<string, unknown> }[] } {
  const warnings: { message: string; fields?: Record<string, unknown> }[] = [];
  const log: Logger = { ...silentLogger, warn: (message: string, fields?: Record<string, unknown>) => void warnings.push({ message, fields }), child: () => log };
  return { log, warnings };
}

const ctx = (log: Logger = silentLogger): PollContext => ({
  http: testFetch(),
  clock: new ManualClock("2026-03-08T10:00:00.000Z"),
  log,
  config: loadConfig({ DATA_DIR: makeTempDir() }),
  render: async (t) => t,
  redact: (v) => v,
});

/** Serves `body` at a fresh URL with `contentType`, and returns the URL. */
let served = 0;
function serve(body: string | Buffer, contentType = "application/rss+xml"): string {
  const url = `https://feeds.example/real-${++served}.xml`;
  server.use(http.get(url, () => new HttpResponse(typeof body === "string" ? body : new Uint8Array(body), { headers: { "content-type": contentType } })));
  return url;
}

async function poll(url: string, state: TriggerState, log?: Logger, extra: Record<string, unknown> = {}) {
  const r = await rssTrigger.poll(rssConfigSchema.parse({ url, max_items_per_poll: 100, ...extra }), state, ctx(log), new Date());
  return { events: r.events, state: { ...state, ...r.state } };
}

const items = (xml: string) => parseFeed(xml).then((f) => feedItems(f, "https://feeds.example/x.xml"));
/** The published_at an item with this <pubDate> gets, through the real feed path. */
const publishedAt = async (text: string) =>
  (await items(`<rss version="2.0"><channel><title>T</title><item><guid>d</guid><pubDate>${text}</pubDate></item></channel></rss>`))[0]!.payload.published_at;

function bigFeed(n: number): string {
  const entries = Array.from({ length: n }, (_, i) => {
    const d = new Date(Date.UTC(2011, 0, 1) + (n - i) * 86_400_000).toUTCString();
    return `<item><title>Episode ${n - i}</title><guid isPermaLink="false">ep-${n - i}</guid><link>https://pod.example/ep/${n - i}</link><pubDate>${d}</pubDate></item>`;
  });
  return `<?xml version="1.0"?><rss version="2.0"><channel><title>Big podcast</title>${entries.join("")}</channel></rss>`;
}

describe("feeds: seen keys", () => {
  const app = createTestApp();
  afterAll(() => app.cleanup());

  test("a 730-item podcast feed polled again fires nothing: an item still in the feed is never new", async () => {
    const url = serve(bigFeed(730));
    const first = await poll(url, emptyTriggerState());
    expect(first.events).toEqual([]);
    const second = await poll(url, first.state);
    expect(second.events).toEqual([]);
    const third = await poll(url, second.state);
    expect(third.events).toEqual([]);
    // A new episode on top still fires, once.
    const grown = serve(bigFeed(731));
    const fourth = await poll(grown, third.state);
    expect(fourth.events.map((e) => e.dedupeKey)).toEqual(["ep-731"]);
  });

  test("a 5,000-item feed polled twice fires nothing the second time, and its stored state stays bounded (measured)", async () => {
    const applet = await app.applets.create({ name: "Big", definition: { version: 1, trigger: { type: "rss", config: { url: "https://feeds.example/big.xml" } }, actions: [{ type: "note", config: { filename: "x.md", content: "x" } }] } });
    const url = serve(bigFeed(5000));
    const first = await poll(url, emptyTriggerState(), undefined, { fire_on_first_poll: false });
    const second = await poll(url, first.state);
    expect(second.events).toEqual([]);
    expect(second.state.seenKeys).toHaveLength(5000);
    // The real repository stores it; its size is the feed's keys, not more.
    (await app.store.triggerState.save(applet.id, second.state, app.clock.now().toISOString()));
    const stored = (await app.store.triggerState.get(applet.id))!;
    expect(stored.seenKeys).toHaveLength(5000);
    const bytes = Buffer.byteLength(JSON.stringify(stored.seenKeys));
    // ~10 bytes per key here ("ep-1234" and quotes): 5,000 keys are about 50 KB, far below the 5 MB feed cap.
    expect(bytes).toBeLessThan(5000 * 12);
    // The feed shrinks to its newest 100: the 4,900 others become history, of which 500 are kept.
    const shrunk = await poll(serve(bigFeed(5000).replace(/<\/channel>/, "").split("</item>").slice(0, 100).join("</item>") + "</item></channel></rss>"), second.state);
    expect(shrunk.events).toEqual([]);
    expect(shrunk.state.seenKeys).toHaveLength(600);
  });
});

describe("feeds: large feeds", () => {
  test("a large feed is read in slices, so the worker's event loop keeps turning while it is parsed", async () => {
    const order: string[] = [];
    const parsing = parseFeed(bigFeed(3000)).then((f) => order.push(`parsed ${f.items.length}`));
    setImmediate(() => order.push("another task ran"));
    await parsing;
    expect(order).toEqual(["another task ran", "parsed 3000"]);
  });
});

describe("hostile feeds in the worker's polls", () => {
  const deep = (levels: number) => `<?xml version="1.0"?><rss version="2.0"><channel><title>Deep</title><item><title>${"<a>".repeat(levels)}${"</a>".repeat(levels)}</title></item></channel></rss>`;

  test("a poll of a feed nesting 200,000 levels fails with the reason, read off the event loop, and the next feed is read as usual", async () => {
    let turns = 0;
    const turning = setInterval(() => turns++, 0);
    const hostile = await poll(serve(deep(200_000)), emptyTriggerState());
    clearInterval(turning);
    expect(hostile.events).toEqual([]);
    expect(hostile.state.lastError).toMatch(/is not a readable feed: the feed nests deeper than 256 levels/);
    expect(hostile.state.errorCount).toBe(1);
    // The poll's process went on with other work while the feed was read.
    expect(turns).toBeGreaterThan(0);
    const next = await poll(serve(bigFeed(3)), emptyTriggerState(), undefined, { fire_on_first_poll: true });
    expect(next.events).toHaveLength(3);
  });

  test("a feed is read however deep up to 256 levels, and refused from 257, and past 250,000 elements", async () => {
    // rss, channel, item and title are 4 of the levels.
    await expect(parseFeed(deep(252))).resolves.toMatchObject({ title: "Deep" });
    await expect(parseFeed(deep(253))).rejects.toThrow(/nests deeper than 256 levels/);
    const wide = `<?xml version="1.0"?><rss version="2.0"><channel><title>Wide</title><item><title>x</title>${"<a/>".repeat(250_000)}</item></channel></rss>`;
    await expect(parseFeed(wide)).rejects.toThrow(/more than 250,000 elements/);
  });
});

describe("feeds as feedparser's tests write them", () => {
  test("a prefixed RSS root (<r:rss>, <r:channel>, <r:item>) is read as RSS", async () => {
    const feed = await parseFeed(`<r:rss xmlns:r="http://backend.userland.com/rss2" version="2.0"><r:channel><r:title>Prefixed</r:title><r:item><r:title>One</r:title><r:link>http://example.com/1</r:link></r:item></r:channel></r:rss>`);
    expect(feed).toMatchObject({ format: "rss", title: "Prefixed", items: [{ title: "One", link: "http://example.com/1" }] });
  });

  test("a <feed> in no namespace, or in a pre-1.0 draft's, is read as Atom", async () => {
    for (const open of ["<feed>", '<feed version="0.3" xmlns="http://purl.org/echo/">', '<feed xmlns="http://example.com/newformat#">']) {
      await expect(parseFeed(`${open}<title>Drafty</title><entry><id>e-1</id><title>E</title></entry></feed>`), open).resolves.toMatchObject({ format: "atom", title: "Drafty", items: [{ id: "e-1", title: "E" }] });
    }
  });

  test("an item's <author> is kept beside an empty <dc:creator/>, and dc:author counts as its author", async () => {
    const [a, b] = await items(`<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>T</title>
      <item><guid>a</guid><author>Ann Author</author><dc:creator/></item><item><guid>b</guid><dc:author>Bo Writer</dc:author></item></channel></rss>`);
    expect([a!.payload.author, b!.payload.author]).toEqual(["Ann Author", "Bo Writer"]);
  });

  test("Dublin Core in RSS 2.0: dc:title is the title, dc:description the content, and a dc:subject of several words stays one category", async () => {
    const [item] = await items(`<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>T</title><item><guid>a</guid><dc:title>Garden notes</dc:title><dc:description>Watering by the moon</dc:description><dc:subject>Home and garden</dc:subject><dc:subject>Water</dc:subject></item></channel></rss>`);
    expect(item!.payload).toMatchObject({ title: "Garden notes", content: "Watering by the moon", categories: ["Home and garden", "Water"] });
  });

  test("markup written straight into <description>, and an xhtml <body>, are the item's content", async () => {
    const [naked, body] = await items(`<rss version="2.0"><channel><title>T</title><item><guid>a</guid><description><p>Plain markup</p><p>Two paragraphs</p></description></item>
      <item><guid>b</guid><body xmlns="http://www.w3.org/1999/xhtml"><p>In a body</p></body></item></channel></rss>`);
    expect([naked!.payload.content, body!.payload.content]).toEqual(["<p>Plain markup</p><p>Two paragraphs</p>", "<p>In a body</p>"]);
  });

  test("Atom 1.0 content of a media type that is neither text nor XML is base64, and is decoded", async () => {
    const [binary, html] = await items(`<feed xmlns="http://www.w3.org/2005/Atom"><title>F</title><entry><id>1</id><content type="application/octet-stream">PHA+RXhhbXBsZTwvcD4=</content></entry><entry><id>2</id><content type="text/html">&lt;p&gt;As written&lt;/p&gt;</content></entry></feed>`);
    expect([binary!.payload.content, html!.payload.content]).toEqual(["<p>Example</p>", "<p>As written</p>"]);
  });

  test('an Atom 0.3 title written as XML (mode="xml") is its text, not empty', async () => {
    const [item] = await items(`<feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>Old</title><entry><id>1</id>
      <title type="application/xhtml+xml" mode="xml"><div xmlns="http://www.w3.org/1999/xhtml">Fish <b>&amp;</b> chips</div></title></entry></feed>`);
    expect(item!.payload.title).toBe("Fish & chips");
  });

  test("an XHTML title keeps its escaped text: `History of the &lt;blink&gt; tag` is the title History of the <blink> tag", async () => {
    const feed = await parseFeed(`<feed xmlns="http://www.w3.org/2005/Atom"><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">History of the &lt;blink&gt; tag</div></title>
      <entry><id>1</id><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">History of the &lt;blink&gt; tag</div></title></entry></feed>`);
    expect([feed.title, feed.items[0]!.title]).toEqual(["History of the <blink> tag", "History of the <blink> tag"]);
  });

  test("escaped markup inside an XHTML content div stays escaped, so the content shows the tag's name instead of making one", async () => {
    const [content, summary] = await items(`<feed xmlns="http://www.w3.org/2005/Atom"><title>F</title>
      <entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">History of the &lt;blink&gt; tag</div></content></entry>
      <entry><id>2</id><summary type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">Use <code>&lt;b&gt;</code> &amp; <b>bold</b></div></summary></entry></feed>`);
    expect([content!.payload.content, summary!.payload.content]).toEqual(["<div>History of the &lt;blink&gt; tag</div>", "<div>Use <code>&lt;b&gt;</code> &amp; <b>bold</b></div>"]);
    expect(content!.payload.summary).toBe("History of the <blink> tag");
  });

  test("text mixed with inline tags inside <description> keeps its order", async () => {
    const [item] = await items(`<rss version="2.0"><channel><title>T</title><item><guid>a</guid><description>Start <b>bold</b> middle <i>italic</i> end<br/>after</description></item></channel></rss>`);
    expect(item!.payload.content).toBe("Start <b>bold</b> middle <i>italic</i> end<br />after");
  });

  test("an HTML title's character references and tags are read as the text they show (&#38; is &, not &#38;)", async () => {
    const feed = await parseFeed(`<feed xmlns="http://www.w3.org/2005/Atom"><title type="html">Tom &amp;amp; Jerry</title>
      <entry><id>1</id><title type="html">It&amp;#8217;s &lt;b&gt;here&lt;/b&gt;</title></entry>
      <entry><id>2</id><title type="html"><![CDATA[<img src="x.png" alt="cat<br />dog"> Pets]]></title></entry></feed>`);
    expect([feed.title, ...feed.items.map((i) => i.title)]).toEqual(["Tom & Jerry", "It\u2019s here", "Pets"]);
  });

  test("a character reference outside Unicode becomes U+FFFD instead of staying as written", async () => {
    const feed = await parseFeed(`<rss version="2.0"><channel><title>a &#1114112; b &#x110000; c</title></channel></rss>`);
    expect(feed.title).toBe("a \ufffd b \ufffd c");
  });

  test("a reference to a windows-1252 code point (&#146;, as old feeds write a curly quote) is that character, not a control", async () => {
    const [item] = await items(`<rss version="2.0"><channel><title>T</title><item><guid>a</guid><title>Don&#146;t panic</title><description>don&#146;t &#147;quote&#148;</description></item></channel></rss>`);
    expect(item!.payload).toMatchObject({ title: "Don\u2019t panic", content: "don\u2019t \u201cquote\u201d" });
  });

  test("an <item> of another namespace in the channel is not an item, and the items' titles and contents stay theirs", async () => {
    const [item, second] = await items(`<rss version="2.0" xmlns:foo="http://foo.example/"><channel><title>T</title><foo:item><title>Not an item</title><description>No</description></foo:item>
      <item><guid>a</guid><title>First</title><description>One</description></item><item><guid>b</guid><title>Second</title></item></channel></rss>`);
    expect([item!.payload.title, item!.payload.content, second!.payload.title]).toEqual(["First", "One", "Second"]);
  });

  test("a CDF channel (<CHANNEL><ITEM HREF LASTMOD><TITLE><ABSTRACT>) is read: HREF is the link, LASTMOD the date, ABSTRACT the content", async () => {
    const feed = await parseFeed(`<CHANNEL HREF="http://example.org/"><TITLE>CDF news</TITLE><ITEM HREF="http://example.org/1" LASTMOD="2004-04-06T23:05:43-05:00"><TITLE>First</TITLE><ABSTRACT>The abstract</ABSTRACT></ITEM></CHANNEL>`);
    expect(feed.title).toBe("CDF news");
    expect(feedItems(feed, "https://feeds.example/x.xml")[0]!.payload).toMatchObject({ title: "First", link: "http://example.org/1", content: "The abstract", published_at: "2004-04-07T04:05:43.000Z" });
  });

  test("an Atom author with an e-mail is `Name (email)`, and an Atom link written as text instead of an href is the link", async () => {
    const [item] = await items(`<feed xmlns="http://www.w3.org/2005/Atom"><title>F</title><entry><id>1</id><author><name>Ann</name><email>ann@example.com</email></author>
      <link rel="enclosure" type="audio/mpeg">http://example.com/a.mp3</link><link rel="alternate" type="text/html">http://example.com/post</link></entry></feed>`);
    expect(item!.payload).toMatchObject({ author: "Ann (ann@example.com)", link: "http://example.com/post" });
  });

  test("an RSS 1.0 item with only rdf:about is keyed by it, not by a hash", async () => {
    const [item] = await items(`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><channel rdf:about="http://example.com/index.rdf"><title>T</title></channel><item rdf:about="http://example.org/1"></item></rdf:RDF>`);
    expect(item!.key).toBe("http://example.org/1");
  });

  test("dates with no space after the weekday's comma, and with Portuguese month and weekday names, are read", () => {
    expect(parseDateText("Fri,24 Nov 2023 10:00:00 GMT")?.toISOString()).toBe("2023-11-24T10:00:00.000Z");
    expect(parseDateText("Qui, 23 Fev 2023 14:05:00 -0300")?.toISOString()).toBe("2023-02-23T17:05:00.000Z");
    expect(parseDateText("sáb, 02 dez 2023 08:00:00 +0000")?.toISOString()).toBe("2023-12-02T08:00:00.000Z");
    expect(parseDateText("Segunda-feira, 04 Set 2023 12:00:00 GMT")?.toISOString()).toBe("2023-09-04T12:00:00.000Z");
    expect(parseDateText("Sun, Dec x 2012")).toBeNull();
  });

  test("a Shift_JIS feed that declares no charset is read as Shift_JIS, not windows-1252", async () => {
    const bytes = Buffer.concat([Buffer.from('<?xml version="1.0"?><rss version="2.0"><channel><title>'), iconv.encode("日本語のフィードです。ニュースをお届けします。", "shift_jis"), Buffer.from("</title></channel></rss>")]);
    await expect(parseFeed(bytes)).resolves.toMatchObject({ title: "日本語のフィードです。ニュースをお届けします。" });
  });

  test("an EBCDIC feed (declared cp037 in EBCDIC bytes) is read", async () => {
    const { registerEbcdic } = await import("@/lib/feeds/ebcdic");
    registerEbcdic();
    const bytes = iconv.encode(`<?xml version="1.0" encoding="cp037"?><feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>Ølfestival</title></feed>`, "cp037");
    await expect(parseFeed(bytes)).resolves.toMatchObject({ format: "atom", title: "Ølfestival" });
  });
});

describe("feeds: dates", () => {
  test("one unreadable Atom <updated> gives that item published_at null and a warning; the feed and its other entries are read", async () => {
    const atom = `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Releases</title>
      <entry><id>tag:r,2026:1</id><title>One</title><link href="https://r.example/1"/><updated>Mon, 30 Nov 2026 10:00:00 CET</updated></entry>
      <entry><id>tag:r,2026:2</id><title>Two</title><link href="https://r.example/2"/><updated>sometime next week</updated></entry>
      <entry><id>tag:r,2026:3</id><title>Three</title><link href="https://r.example/3"/><updated>2026-11-29T08:00:00Z</updated></entry></feed>`;
    const { log, warnings } = captureLog();
    const r = await poll(serve(atom, "application/atom+xml"), emptyTriggerState(), log, { fire_on_first_poll: true });
    expect(r.state.lastError).toBeNull();
    expect(r.events.map((e) => [e.payload.title, e.payload.published_at])).toEqual([
      ["Three", "2026-11-29T08:00:00.000Z"],
      ["Two", null],
      ["One", "2026-11-30T09:00:00.000Z"],
    ]);
    expect(warnings).toEqual([{ message: 'rss: unreadable date in <atom:updated>: "sometime next week"; published_at is null for this item', fields: expect.objectContaining({ item: "tag:r,2026:2" }) }]);
  });

  test.each([
    ["MET", "Mon, 30 Nov 2026 10:00:00 MET", "2026-11-30T09:00:00.000Z"],
    ["MEST", "Tue, 30 Jun 2026 10:00:00 MEST", "2026-06-30T08:00:00.000Z"],
    ["PT in summer (PDT)", "Wed, 08 Jul 2026 10:00:00 PT", "2026-07-08T17:00:00.000Z"],
    ["PT in winter (PST)", "Tue, 08 Dec 2026 10:00:00 PT", "2026-12-08T18:00:00.000Z"],
    ["ET", "Wed, 08 Jul 2026 10:00:00 ET", "2026-07-08T14:00:00.000Z"],
    ["CT", "Wed, 08 Jul 2026 10:00:00 CT", "2026-07-08T15:00:00.000Z"],
    ["MT", "Tue, 08 Dec 2026 10:00:00 MT", "2026-12-08T17:00:00.000Z"],
    ["AT", "Tue, 08 Dec 2026 10:00:00 AT", "2026-12-08T14:00:00.000Z"],
    ["Etc/GMT", "Mon, 30 Nov 2026 10:00:00 Etc/GMT", "2026-11-30T10:00:00.000Z"],
    ["Etc/GMT+5 (POSIX sign: UTC−5)", "Mon, 30 Nov 2026 10:00:00 Etc/GMT+5", "2026-11-30T15:00:00.000Z"],
  ])("the named zone %s is read", async (_name, text, iso) => {
    expect(await publishedAt(text)).toBe(iso);
    expect(parseDateText(text)?.toISOString()).toBe(iso);
  });

  test("short ISO forms are read as ISO 8601 says, not misread (03-12-31 is 2003-12-31)", async () => {
    expect(await publishedAt("03-12-31")).toBe("2003-12-31T00:00:00.000Z");
    expect(await publishedAt("031231")).toBe("2003-12-31T00:00:00.000Z");
    expect(await publishedAt("2003-12")).toBe("2003-12-01T00:00:00.000Z");
    expect(await publishedAt("2003")).toBe("2003-01-01T00:00:00.000Z");
    expect(await publishedAt("20031231T101455Z")).toBe("2003-12-31T10:14:55.000Z");
  });

  test.each(["Sun, Dec x 2012", "2026-02-30", "Mon, 31 Apr 2026 10:00:00 GMT", "2026-03-08T25:00:00Z", "Mon, 30 Nov 2026 10:00:00 XYZ", "2026 is a year", "next tuesday"])(
    "the invalid date %j is refused (null), never guessed",
    async (text) => {
      expect(await publishedAt(text)).toBeNull();
      expect(parseDateText(text)).toBeNull();
    },
  );

  test("a date without a zone is UTC on every host, whatever the server's TZ", async () => {
    const feed = `<rss version="2.0"><channel><title>T</title><item><guid>a</guid><pubDate>2026-03-08 10:00:00</pubDate></item><item><guid>b</guid><pubDate>Sun, 08 Mar 2026 10:00:00</pubDate></item></channel></rss>`;
    const before = process.env.TZ;
    const seen: unknown[] = [];
    try {
      for (const tz of ["UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Kiritimati"]) {
        process.env.TZ = tz;
        seen.push((await items(feed)).map((i) => i.payload.published_at));
      }
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
    for (const s of seen) expect(s).toEqual(["2026-03-08T10:00:00.000Z", "2026-03-08T10:00:00.000Z"]);
  });
});

describe("feeds: bytes and entities", () => {
  const latin = `<?xml version="1.0" encoding="ISO-8859-1"?><rss version="2.0"><channel><title>Café Köln</title><item><guid>1</guid><title>Über “quotes” – naïve</title><description>Grüße aus Zürich</description></item></channel></rss>`;

  test("a feed declared ISO-8859-1 (read as windows-1252, as browsers do) has no U+FFFD", async () => {
    const bytes = iconv.encode(latin, "windows-1252");
    const r = await poll(serve(bytes, "application/rss+xml"), emptyTriggerState(), undefined, { fire_on_first_poll: true });
    expect(r.events.map((e) => [e.payload.feed_title, e.payload.title, e.payload.summary])).toEqual([["Café Köln", "Über “quotes” – naïve", "Grüße aus Zürich"]]);
  });

  test("a charset served in Content-Type wins over a missing declaration", async () => {
    const bytes = iconv.encode(latin.replace(' encoding="ISO-8859-1"', ""), "windows-1252");
    const r = await poll(serve(bytes, "text/xml; charset=windows-1252"), emptyTriggerState(), undefined, { fire_on_first_poll: true });
    expect(r.events[0]!.payload.title).toBe("Über “quotes” – naïve");
    expect(JSON.stringify(r.events)).not.toContain("\uFFFD");
  });

  test.each([
    ["UTF-16LE with a BOM", "utf-16le", true],
    ["UTF-16BE with a BOM", "utf-16be", true],
    ["UTF-16LE without a BOM", "utf-16le", false],
    ["UTF-32LE with a BOM", "utf-32le", true],
    ["UTF-32BE without a BOM", "utf-32be", false],
  ])("a %s feed is read", async (_name, encoding, bom) => {
    const xml = latin.replace("ISO-8859-1", encoding.toUpperCase().replace(/(LE|BE)$/, ""));
    const bytes = iconv.encode(xml, encoding, { addBOM: bom });
    const r = await poll(serve(bytes, "application/rss+xml"), emptyTriggerState(), undefined, { fire_on_first_poll: true });
    expect(r.state.lastError).toBeNull();
    expect(r.events[0]!.payload.title).toBe("Über “quotes” – naïve");
  });

  test("summary and strip_html decode every HTML entity (&ouml;, &eacute;, &ograve;, numeric ones)", async () => {
    expect(stripHtml("<p>K&ouml;ln &eacute;t&eacute; per&ograve; &Aring; &hearts; &#x1F44D; &#233;</p>")).toBe("Köln été però Å ♥ 👍 é");
    const feed = `<rss version="2.0"><channel><title>T</title><item><guid>1</guid><description>&lt;p&gt;K&amp;ouml;ln &amp;eacute;t&amp;eacute; per&amp;ograve;&lt;/p&gt;</description></item></channel></rss>`;
    expect((await items(feed))[0]!.payload.summary).toBe("Köln été però");
  });
});

describe("feeds: formats", () => {
  test('<rss> without a version, RSS 1.0 with rdf:/rss: prefixes, and an empty <rss version="2.0"></rss> are read', async () => {
    const noVersion = await items(`<rss><channel><title>T</title><item><title>A</title><link>https://x.example/a</link></item></channel></rss>`);
    expect(noVersion.map((i) => [i.key, i.payload.title])).toEqual([["https://x.example/a", "A"]]);
    const prefixed = await parseFeed(`<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:rss="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
      <rss:channel rdf:about="https://x.example/"><rss:title>Prefixed</rss:title></rss:channel>
      <rss:item rdf:about="https://x.example/1"><rss:title>One</rss:title><rss:link>https://x.example/1</rss:link><dc:date>2026-03-01T10:00:00Z</dc:date></rss:item></rdf:RDF>`);
    expect(prefixed.title).toBe("Prefixed");
    expect(feedItems(prefixed, "u").map((i) => [i.payload.title, i.payload.link, i.payload.published_at])).toEqual([["One", "https://x.example/1", "2026-03-01T10:00:00.000Z"]]);
    const empty = await parseFeed(`<rss version="2.0"></rss>`);
    expect(empty.items).toEqual([]);
    const r = await poll(serve(`<rss version="2.0"></rss>`), emptyTriggerState());
    expect(r.state.lastError).toBeNull();
  });

  test("an Atom xhtml title, base64 content, dc:creator/dc:subject/dc:date, dcterms:issued, a permalink guid as the link, an <id> with attributes as the key", async () => {
    const atom = await items(`<feed xmlns="http://www.w3.org/2005/Atom"><title>F</title>
      <entry><id xml:base="https://x.example/">urn:x:1</id><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">Hello <b>world</b></div></title><updated>2026-03-01T00:00:00Z</updated></entry>
      <entry><id xml:base="https://x.example/">urn:x:2</id><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">Hello <b>world</b></div></title><updated>2026-03-01T00:00:00Z</updated></entry></feed>`);
    // Two entries with the same title and date keep their own keys (their <id>s): both fire.
    expect(atom.map((i) => [i.key, i.payload.title])).toEqual([["urn:x:1", "Hello world"], ["urn:x:2", "Hello world"]]);
    const atom03 = await items(`<feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>Old</title><entry><id>tag:x,2004:1</id><title>E</title><issued>2004-01-01T00:00:00-05:00</issued><content type="text/html" mode="base64">PHA+SGVsbG8gPGI+YmFzZTY0PC9iPjwvcD4=</content></entry></feed>`);
    expect(atom03[0]!.payload).toMatchObject({ content: "<p>Hello <b>base64</b></p>", summary: "Hello base64", published_at: "2004-01-01T05:00:00.000Z" });
    const rss = await items(`<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"><channel><title>T</title>
      <item><title>A</title><guid isPermaLink="true">https://x.example/perma</guid><dc:creator>Ann Author</dc:creator><dc:subject>cats</dc:subject><dc:subject>dogs</dc:subject><dc:date>2026-03-02T09:00:00+01:00</dc:date></item>
      <item><title>B</title><guid isPermaLink="false">b-1</guid><dcterms:issued>2026-03-03</dcterms:issued></item></channel></rss>`);
    expect(rss.map((i) => [i.key, i.payload.link, i.payload.author, i.payload.categories, i.payload.published_at])).toEqual([
      ["https://x.example/perma", "https://x.example/perma", "Ann Author", ["cats", "dogs"], "2026-03-02T08:00:00.000Z"],
      ["b-1", "", null, [], "2026-03-03T00:00:00.000Z"],
    ]);
  });

  test.each([
    ["1.1", { version: "https://jsonfeed.org/version/1.1", title: "JSON news", authors: [{ name: "Feed Author" }], items: [{ id: "j-1", url: "https://j.example/1", title: "First", content_html: "<p>Hello &amp; welcome</p>", date_published: "2026-03-01T10:00:00+01:00", tags: ["a", "b"] }] }],
    ["1.0", { version: "https://jsonfeed.org/version/1", title: "JSON news", author: { name: "Feed Author" }, items: [{ id: 1, url: "https://j.example/1", title: "First", content_text: "Hello & welcome", date_published: "2026-03-01T10:00:00+01:00", tags: ["a", "b"] }] }],
  ])("JSON Feed %s gives the same ingredients as RSS and Atom", async (_v, doc) => {
    const r = await poll(serve(JSON.stringify(doc), "application/feed+json"), emptyTriggerState(), undefined, { fire_on_first_poll: true });
    expect(r.state.lastError).toBeNull();
    expect(r.events).toHaveLength(1);
    expect(r.events[0]!.dedupeKey).toMatch(/^(j-)?1$/);
    expect(r.events[0]!.payload).toMatchObject({ title: "First", link: "https://j.example/1", summary: "Hello & welcome", author: "Feed Author", published_at: "2026-03-01T09:00:00.000Z", categories: ["a", "b"], feed_title: "JSON news" });
    expect(Object.keys(r.events[0]!.payload).sort()).toEqual(rssTrigger.ingredients.map((i) => i.name).sort());
  });

  test("what a user sees of a parse failure names the feed URL and the line, never a JavaScript internal", async () => {
    const cases: [string, string, RegExp][] = [
      ["<!doctype html><html><body>Moved</body></html>", "text/html", /is not a readable feed: it is not an RSS, Atom or JSON feed \(it looks like an HTML page\)/],
      ['{"version":"2","items":[]}', "application/json", /is JSON but not a JSON Feed: "version" should be/],
      ["Service temporarily unavailable, try later", "text/plain", /not an RSS, Atom or JSON feed \(it looks like text that is not XML\)/],
      ['<?xml version="1.0"?><opml version="2.0"><body/></opml>', "text/xml", /it looks like XML without an <rss>, <feed> or <rdf:RDF> root/],
    ];
    for (const [body, type, message] of cases) {
      const url = serve(body, type);
      const r = await poll(url, emptyTriggerState());
      expect(r.state.lastError).toMatch(message);
      expect(r.state.lastError).toContain(url);
      expect(r.state.lastError).not.toMatch(/Cannot read properties|undefined|TypeError/);
    }
  });
});
