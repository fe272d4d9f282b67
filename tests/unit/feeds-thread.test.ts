import { describe, expect, test } from "vitest";
import { FeedFormatError } from "@/lib/feeds/read";
import { readFeedOffThread } from "@/lib/feeds/thread";

/** lib/feeds/thread: feeds read in a worker thread, one at a time, each within a time limit. */

const feed = (items: number) =>
  Buffer.from(`<?xml version="1.0"?><rss version="2.0"><channel><title>Pod</title>${Array.from({ length: items }, (_, i) => `<item><title>Episode ${i}</title><guid>ep-${i}</guid></item>`).join("")}</channel></rss>`);

describe("reading feeds in a thread", () => {
  test("a feed read in the thread gives what the in-process reader gives, bytes decoded by their charset", async () => {
    const latin1 = Buffer.concat([Buffer.from('<?xml version="1.0" encoding="ISO-8859-1"?><rss version="2.0"><channel><title>Caf'), Buffer.from([0xe9]), Buffer.from("</title></channel></rss>")]);
    await expect(readFeedOffThread(latin1)).resolves.toMatchObject({ format: "rss", title: "Café", items: [] });
    await expect(readFeedOffThread(feed(3), { feedUrl: "https://pod.example/feed.xml" })).resolves.toMatchObject({ title: "Pod", items: [{ guid: "ep-0" }, { guid: "ep-1" }, { guid: "ep-2" }] });
  });

  test("a document that is no feed is refused with a FeedFormatError saying why", async () => {
    const refused = readFeedOffThread(Buffer.from("<!doctype html><html><body>maintenance</body></html>"));
    await expect(refused).rejects.toBeInstanceOf(FeedFormatError);
    await expect(refused).rejects.toThrow(/it looks like an HTML page/);
  });

  test("a feed not read within its time limit is given up with a message saying so, and the next feed gets a fresh thread", async () => {
    // 1 ms: less than a thread takes to start, so the limit always strikes first.
    await expect(readFeedOffThread(feed(3000), { timeoutMs: 1 })).rejects.toThrow(new FeedFormatError("reading it took longer than 1 ms, so it was given up"));
    await expect(readFeedOffThread(feed(2))).resolves.toMatchObject({ items: [{ guid: "ep-0" }, { guid: "ep-1" }] });
  });

  test("feeds asked for at once are all read, each to its own caller", async () => {
    const sizes = [5, 1, 3, 0, 2];
    const read = await Promise.all(sizes.map((n) => readFeedOffThread(feed(n))));
    expect(read.map((f) => f.items.length)).toEqual(sizes);
  });
});
