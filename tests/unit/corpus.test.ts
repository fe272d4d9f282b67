import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { parseInbound } from "@/lib/mail/normalize";
import { feedItems, parseFeed } from "@/lib/triggers/rss";

/**
 * Every file of fixtures/corpus (public feeds and mail, credited in its README) through the
 * real parsing code, checked field by field against fixtures/corpus/manifest.json.
 */

const root = path.resolve(__dirname, "../../fixtures/corpus");

interface FeedExpectation {
  url?: string;
  contentType?: string;
  error?: string;
  format?: string;
  title?: string | null;
  count?: number;
  first?: { key?: string; title: string; link: string; published_at: string | null; author: string | null; categories: string[]; summary: string };
}
interface MailExpectation {
  from: string;
  subject: string;
  date?: string;
  date_source: "header" | "received";
  message_id: string;
  text_first_line: string;
  attachments: string[];
}

const manifest = JSON.parse(readFileSync(path.join(root, "manifest.json"), "utf8")) as { feeds: Record<string, FeedExpectation>; mail: Record<string, MailExpectation> };
const filesUnder = (dir: string): string[] => readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.relative(path.join(root, dir), path.join(e.parentPath, e.name)));
const receivedAt = new Date("2026-03-10T08:20:00.000Z");

describe("corpus: real feeds", () => {
  test("every feed file in the corpus has an entry in the manifest, and every entry a file", () => {
    expect(filesUnder("feeds").sort()).toEqual(Object.keys(manifest.feeds).sort());
  });

  test.each(Object.entries(manifest.feeds))("%s", async (file, expected) => {
    const bytes = readFileSync(path.join(root, "feeds", file));
    const read = parseFeed(bytes, { contentType: expected.contentType, feedUrl: expected.url ?? "https://corpus.example/feed" });
    if (expected.error) {
      await expect(read).rejects.toThrow(new RegExp(expected.error));
      return;
    }
    const feed = await read;
    const items = feedItems(feed, expected.url ?? "https://corpus.example/feed");
    expect({ format: feed.format, title: feed.title, count: items.length }).toEqual({ format: expected.format, title: expected.title, count: expected.count });
    const first = items[0]!;
    const want = expected.first!;
    const got = first.payload;
    if (want.key !== undefined) expect(first.key).toBe(want.key);
    expect({ title: got.title, link: got.link, published_at: got.published_at, author: got.author, categories: got.categories }).toEqual({
      title: want.title,
      link: want.link,
      published_at: want.published_at,
      author: want.author,
      categories: want.categories,
    });
    expect(String(got.summary).startsWith(want.summary)).toBe(true);
    // Nothing decoded wrong anywhere in the feed.
    expect(JSON.stringify(items)).not.toContain("\uFFFD");
  });
});

describe("corpus: real mail", () => {
  test("every mail file in the corpus has an entry in the manifest, and every entry a file", () => {
    expect(filesUnder("mail").sort()).toEqual(Object.keys(manifest.mail).sort());
  });

  test.each(Object.entries(manifest.mail))("%s", async (file, expected) => {
    const raw = readFileSync(path.join(root, "mail", file));
    const { email } = await parseInbound(raw, { receivedAt });
    expect({
      from: email.from,
      subject: email.subject,
      date_source: email.date_source,
      text_first_line: email.text_first_line,
      attachments: email.attachments.map((a) => a.filename),
    }).toEqual({ from: expected.from, subject: expected.subject, date_source: expected.date_source, text_first_line: expected.text_first_line, attachments: expected.attachments });
    expect(email.date).toBe(expected.date ?? receivedAt.toISOString());
    if (expected.message_id === "generated") expect(email.message_id).toMatch(/^<[0-9a-f]{64}@whenthen\.generated>$/);
    else expect(email.message_id).toBe(expected.message_id);
    // The same bytes parsed again give the same fields (no parse-time date).
    expect((await parseInbound(raw, { receivedAt: new Date("2030-01-01T00:00:00Z") })).email.date).toBe(expected.date ?? "2030-01-01T00:00:00.000Z");
  });
});
