/**
 * The feed parser chosen by measurement: each candidate reads every feed of
 * fixtures/corpus, and a feed counts as read correctly when the format-independent fields the RSS
 * trigger gives (feed title, item count, first item's key, title, link, date, author, categories,
 * summary start) equal the hand-written manifest; an expected refusal counts when the candidate
 * refuses. Throughput is items per second over the same files, parsed again and again for
 * THROUGHPUT_MS per candidate.
 *
 * The candidates share whenthen's own summary (strip_html) and, where a library leaves dates as
 * text, its date reading, so what differs is what each parser makes of the document:
 * - whenthen now: bytes decoded by lib/feeds/decode, read by feedparser (lib/feeds/read), items by
 *   lib/triggers/rss — the code the trigger runs;
 * - whenthen before #21: rss-parser on the body decoded as UTF-8, mapped as the old rss.ts did;
 * - feedsmith and @rowanmanning/feed-parser, each on the same decoded text, mapped to the fields.
 * Mail: the corpus mails through today's lib/mail/normalize, and through mailparser as the code
 * before #21 used it (its date, the old Message-ID rule, ASCII-only file names).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseFeed as feedsmithParse } from "feedsmith";
import rowan from "@rowanmanning/feed-parser";
import { simpleParser } from "mailparser";
import RssParser from "rss-parser";
import { parseDateText } from "../lib/core/dates";
import { decodeFeed } from "../lib/feeds/decode";
import { sanitizeFilename } from "../lib/files/sanitize";
import { parseInbound } from "../lib/mail/normalize";
import { stripHtml } from "../lib/template/filters";
import { feedItems, parseFeed, selectNewItems } from "../lib/triggers/rss";
import type { BenchFigure } from "./types";

const THROUGHPUT_MS = 1500;
const corpus = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/corpus");

interface Expected {
  url?: string;
  contentType?: string;
  error?: string;
  title?: string | null;
  count?: number;
  first?: { key?: string; title: string; link: string; published_at: string | null; author: string | null; categories: string[]; summary: string };
}
interface Item {
  key: string;
  title: string;
  link: string;
  published_at: string | null;
  author: string | null;
  categories: string[];
  summary: string;
}
interface Read {
  title: string | null;
  items: Item[];
}
type Candidate = (bytes: Buffer, url: string, contentType: string | undefined) => Promise<Read>;

const manifest = JSON.parse(readFileSync(path.join(corpus, "manifest.json"), "utf8")) as { feeds: Record<string, Expected>; mail: Record<string, Record<string, unknown>> };

const text = (v: unknown): string | null => (typeof v === "string" && v.trim() !== "" ? v.trim() : typeof v === "number" ? String(v) : null);
const summaryOf = (html: string | null): string => Array.from(stripHtml(html ?? "")).slice(0, 300).join("");
const sha = (s: string): string => `sha256:${createHash("sha256").update(s).digest("hex")}`;
const keyOf = (guid: unknown, link: unknown, title: unknown, date: string | null): string => text(guid) ?? text(link) ?? sha(`${text(title) ?? ""}${date ?? ""}`);
const iso = (d: unknown): string | null => (d instanceof Date && !Number.isNaN(d.getTime()) ? d.toISOString() : null);
const dateText = (...texts: unknown[]): string | null => {
  for (const t of texts) {
    const d = typeof t === "string" ? parseDateText(t) : null;
    if (d) return d.toISOString();
  }
  return null;
};

const now: Candidate = async (bytes, url, contentType) => {
  const feed = await parseFeed(bytes, { contentType, feedUrl: url });
  return { title: feed.title, items: feedItems(feed, url).map((i) => ({ key: i.key, ...(i.payload as Omit<Item, "key">) })) };
};

// What lib/triggers/rss.ts did before #21 (commit 6189139), with today's summary.
const rssParser: Candidate = async (bytes) => {
  const options = { customFields: { item: [["category", "rawCategories", { keepArray: true }]] as [string, string, { keepArray: boolean }][] } };
  const feed = await new RssParser(options).parseString(bytes.toString("utf8"));
  return {
    title: text(feed.title),
    items: (feed.items as unknown as Record<string, unknown>[]).map((item) => {
      const published = iso(text(item.isoDate) ? new Date(String(item.isoDate)) : null);
      const categories: string[] = [];
      for (const c of [...((item.categories as unknown[]) ?? []), ...((item.rawCategories as unknown[]) ?? [])]) {
        const t = typeof c === "string" ? c : (c as { _?: string; $?: { term?: string } })?._ ?? (c as { $?: { term?: string } })?.$?.term;
        if (typeof t === "string" && t.trim() && !categories.includes(t.trim())) categories.push(t.trim());
      }
      return {
        key: text(item.guid) ?? text(item.id) ?? text(item.link) ?? sha(`${text(item.title) ?? ""}${text(item.isoDate) ?? text(item.pubDate) ?? ""}`),
        title: text(item.title) ?? "",
        link: text(item.link) ?? "",
        published_at: published,
        author: text(item.creator) ?? text(item["dc:creator"]) ?? text(item.author),
        categories,
        summary: summaryOf(text(item["content:encoded"]) ?? text(item.content) ?? text(item.summary)),
      };
    }),
  };
};

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const first = (v: unknown): Any | undefined => (Array.isArray(v) ? v[0] : v) as Any | undefined;
const value = (v: unknown): string | null => (typeof v === "object" && v !== null ? text((v as Any).value) : text(v));

const feedsmith: Candidate = async (bytes, _url, contentType) => {
  const { format, feed } = feedsmithParse(decodeFeed(bytes, contentType).text) as { format: string; feed: Any };
  const entries: Any[] = format === "atom" ? (feed.entries ?? []) : (feed.items ?? []);
  return {
    title: value(feed.title),
    items: entries.map((e) => {
      if (format === "atom") {
        const link = (e.links as Any[] | undefined)?.find((l) => !l.rel || l.rel === "alternate")?.href ?? null;
        const date = dateText(e.published, e.updated);
        const author = first(e.authors)?.name ?? first(feed.authors)?.name ?? null;
        return { key: keyOf(e.id, link, value(e.title), date), title: value(e.title) ?? "", link: link ?? "", published_at: date, author: text(author), categories: ((e.categories as Any[]) ?? []).map((c) => c.term), summary: summaryOf(value(e.content) ?? value(e.summary)) };
      }
      if (format === "json") {
        const date = dateText(e.date_published, e.date_modified);
        return { key: keyOf(e.id, e.url, e.title, date), title: text(e.title) ?? "", link: text(e.url) ?? "", published_at: date, author: text(first(e.authors)?.name ?? first(feed.authors)?.name), categories: (e.tags as string[]) ?? [], summary: summaryOf(text(e.content_html) ?? text(e.content_text)) };
      }
      const date = dateText(e.pubDate, ...((e.dc?.dates as string[]) ?? []), e.dcterms?.issued, e.dcterms?.created);
      const link = text(e.link) ?? (e.guid?.isPermaLink !== false ? text(e.guid?.value) : null);
      const author = text(first(e.authors)?.name) ?? text(first(e.dc?.creators));
      const categories = [...((e.categories as Any[]) ?? []).map((c) => c.name), ...((e.dc?.subjects as string[]) ?? [])];
      return { key: keyOf(e.guid?.value, link, e.title, date), title: text(e.title) ?? "", link: link ?? "", published_at: date, author, categories, summary: summaryOf(text(e.content?.encoded) ?? text(e.description)) };
    }),
  };
};

const rowanParser: Candidate = async (bytes, _url, contentType) => {
  const feed = rowan.parseFeed(decodeFeed(bytes, contentType).text);
  return {
    title: text(feed.title),
    items: feed.items.map((i) => {
      const date = iso(i.published) ?? iso(i.updated);
      return { key: keyOf(i.id, i.url, i.title, date), title: text(i.title) ?? "", link: text(i.url) ?? "", published_at: date, author: text(i.authors[0]?.name), categories: i.categories.map((c) => c.label ?? c.term), summary: summaryOf(text(i.content) ?? text(i.description)) };
    }),
  };
};

const CANDIDATES: [string, Candidate][] = [
  ["whenthen now (feedparser + lib/feeds)", now],
  ["whenthen before #21 (rss-parser)", rssParser],
  ["feedsmith 3.0.1", feedsmith],
  ["@rowanmanning/feed-parser 2.1.5", rowanParser],
];

async function correct(candidate: Candidate, file: string, expected: Expected): Promise<boolean> {
  const bytes = readFileSync(path.join(corpus, "feeds", file));
  const url = expected.url ?? "https://corpus.example/feed";
  let read: Read;
  try {
    read = await candidate(bytes, url, expected.contentType);
  } catch {
    return expected.error !== undefined;
  }
  if (expected.error !== undefined) return false;
  const item = read.items[0];
  const want = expected.first!;
  if (read.title !== expected.title || read.items.length !== expected.count || !item) return false;
  if (want.key !== undefined && item.key !== want.key) return false;
  return (
    item.title === want.title &&
    item.link === want.link &&
    item.published_at === want.published_at &&
    item.author === want.author &&
    JSON.stringify(item.categories) === JSON.stringify(want.categories) &&
    item.summary.startsWith(want.summary) &&
    !JSON.stringify(read).includes("\uFFFD")
  );
}

async function throughput(candidate: Candidate, files: [string, Expected][]): Promise<number> {
  const inputs = files.filter(([, e]) => !e.error).map(([f, e]) => ({ bytes: readFileSync(path.join(corpus, "feeds", f)), url: e.url ?? "https://corpus.example/feed", type: e.contentType }));
  let items = 0;
  const started = performance.now();
  while (performance.now() - started < THROUGHPUT_MS) {
    for (const input of inputs) {
      try {
        items += (await candidate(input.bytes, input.url, input.type)).items.length;
      } catch {
        // A feed the candidate cannot read adds no items.
      }
    }
  }
  return items / ((performance.now() - started) / 1000);
}

async function mailCorrect(old: boolean): Promise<number> {
  let ok = 0;
  for (const [file, want] of Object.entries(manifest.mail)) {
    const raw = readFileSync(path.join(corpus, "mail", file));
    const receivedAt = new Date("2026-03-10T08:20:00.000Z");
    let got: Record<string, unknown>;
    if (old) {
      const parsed = await simpleParser(raw, { skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
      const id = (parsed.messageId ?? "").trim().replace(/^<|>$/g, "");
      got = {
        from: parsed.from?.value[0]?.address ?? "",
        subject: parsed.subject ?? "",
        date: (parsed.date ?? receivedAt).toISOString(),
        message_id: /^[^<>@]+@[^<>@]+$/.test(id) ? `<${id}>` : "generated",
        text_first_line: ((parsed.text ?? "").split(/\r?\n/).find((l) => l.trim() !== "") ?? "").trim(),
        attachments: parsed.attachments.map((a, i) => sanitizeFilename(a.filename ?? "", `attachment-${i + 1}${a.contentType === "message/rfc822" ? ".eml" : ""}`)),
      };
    } else {
      const { email } = await parseInbound(raw, { receivedAt });
      got = { ...email, message_id: email.message_id.endsWith("@whenthen.generated>") ? "generated" : email.message_id, attachments: email.attachments.map((a) => a.filename) };
    }
    const fields = ["from", "subject", "message_id", "text_first_line", "attachments"];
    const dateOk = got.date === ((want.date as string | undefined) ?? receivedAt.toISOString());
    if (dateOk && fields.every((f) => JSON.stringify(got[f]) === JSON.stringify(want[f]))) ok++;
  }
  return ok;
}

export default async function feedsBench(): Promise<BenchFigure[]> {
  const files = Object.entries(manifest.feeds);
  const figures: BenchFigure[] = [];
  for (const [name, candidate] of CANDIDATES) {
    const wrong: string[] = [];
    for (const [file, expected] of files) if (!(await correct(candidate, file, expected))) wrong.push(file);
    figures.push({ name: `${name}: corpus feeds read correctly`, unit: `of ${files.length}`, value: files.length - wrong.length, notes: wrong.length ? `wrong: ${wrong.join(", ")}` : "all" });
  }
  for (const [name, candidate] of CANDIDATES) {
    figures.push({ name: `${name}: throughput on the corpus`, unit: "items/s", value: await throughput(candidate, files), notes: "one core, the corpus feeds the candidate can read, parsed again and again" });
  }
  // A large feed: fixed costs per document no longer dominate.
  const big = Buffer.from(bigFeed(5000));
  for (const [name, candidate] of CANDIDATES.slice(0, 2)) {
    const started = performance.now();
    const read = await candidate(big, "https://pod.example/feed.xml", "application/rss+xml");
    const seconds = (performance.now() - started) / 1000;
    figures.push({ name: `${name}: a 5,000-item podcast feed (${(big.length / 1e6).toFixed(1)} MB)`, unit: "items/s", value: read.items.length / seconds, notes: `${Math.round(seconds * 1000)} ms for the feed` });
  }
  // The trigger's state for that feed after two polls: every key the feed shows, plus the history.
  const items = feedItems(await parseFeed(big), "https://pod.example/feed.xml");
  const once = selectNewItems(items, [], { fireOnFirstPoll: false, maxItems: 20 });
  const twice = selectNewItems(items, once.seenKeys, { fireOnFirstPoll: false, maxItems: 20 });
  figures.push({ name: "seen-keys state after two polls of the 5,000-item feed", unit: "bytes", value: Buffer.byteLength(JSON.stringify(twice.seenKeys)), notes: `${twice.seenKeys.length} keys stored, ${twice.fire.length} fired on the second poll` });
  const mails = Object.keys(manifest.mail).length;
  figures.push({ name: "mail, whenthen now (lib/mail/normalize): corpus mails read correctly", unit: `of ${mails}`, value: await mailCorrect(false) });
  figures.push({ name: "mail, mailparser as used before #21: corpus mails read correctly", unit: `of ${mails}`, value: await mailCorrect(true), notes: "a message without a readable Date gets the parse time" });
  return figures;
}

function bigFeed(n: number): string {
  const entries = Array.from({ length: n }, (_, i) => {
    const d = new Date(Date.UTC(2011, 0, 1) + (n - i) * 86_400_000).toUTCString();
    return `<item><title>Episode ${n - i} &amp; friends</title><guid isPermaLink="false">https://pod.example/episodes/${n - i}</guid><link>https://pod.example/ep/${n - i}</link><pubDate>${d}</pubDate><description>&lt;p&gt;Show notes for episode ${n - i}: a paragraph or so of &lt;b&gt;text&lt;/b&gt; about what was said.&lt;/p&gt;</description></item>`;
  });
  return `<?xml version="1.0"?><rss version="2.0"><channel><title>Big podcast</title>${entries.join("")}</channel></rss>`;
}
