import { createHash } from "node:crypto";
import { nextRunAfter, type ScheduleTiming } from "@whenthen/schedules";
import { z } from "zod";
import { errorMessage } from "../core/errors";
import { LIMITS } from "../core/limits";
import { stripHtml } from "../template/filters";
import type { PollContext, TriggerPlugin, TriggerState } from "./types";

/**
 * The RSS/Atom trigger. Fetching is the only I/O; turning a feed into items and deciding which of
 * them are new are pure functions (`parseFeed`, `feedItems`, `selectNewItems`) tested on their own.
 */

/** Bytes of feed read before giving up: past this the feed is refused, never parsed half. */
export const FEED_MAX_BYTES = 5 * 1024 * 1024;
const FEED_TIMEOUT_MS = 20_000;
const SUMMARY_CHARS = 300;
/** After this many consecutive failed polls the feed is polled hourly until one succeeds. */
export const RSS_BACKOFF_AFTER_ERRORS = 3;
export const RSS_BACKOFF_MINUTES = 60;
export const RSS_DEFAULT_INTERVAL_MIN = 15;
// Keys are stored in seen_keys and as dedupe keys; a very long link is hashed instead.
const MAX_KEY_LENGTH = 500;

const httpUrl = z
  .string()
  .trim()
  .min(1, "required")
  .max(2000)
  .refine((u) => /^https?:\/\//i.test(u), "must be an http or https URL");

export const rssConfigSchema = z.strictObject({
  url: httpUrl,
  interval_min: z.number().int().min(5, "at least 5 minutes").max(10_080).default(RSS_DEFAULT_INTERVAL_MIN),
  fire_on_first_poll: z.boolean().default(false),
  max_items_per_poll: z.number().int().min(1).max(100).default(20),
});
export type RssConfig = z.infer<typeof rssConfigSchema>;

/** Polling cadence: the configured interval, or hourly after 3 consecutive errors. */
export const rssTiming = (config: RssConfig, state: Pick<TriggerState, "errorCount">): ScheduleTiming => ({
  interval: `${state.errorCount >= RSS_BACKOFF_AFTER_ERRORS ? RSS_BACKOFF_MINUTES : config.interval_min}m`,
});

export interface FeedItem {
  key: string;
  /** null when the item has no parseable date. */
  published: Date | null;
  payload: Record<string, unknown>;
}

export interface ParsedFeed {
  title: string | null;
  items: RawItem[];
}

type RawItem = Record<string, unknown>;

// Atom <category term="…"/> is not read by rss-parser itself; keep the raw elements to read it.
const PARSER_OPTIONS = { customFields: { item: [["category", "rawCategories", { keepArray: true }]] as [string, string, { keepArray: boolean }][] } };

/**
 * XML → feed. rss-parser sits on xml2js/sax in strict mode: a DOCTYPE's own entities are never
 * expanded (a billion-laughs feed fails with "Invalid character entity"), and only known element
 * names become item fields, so a `<__proto__>` element reaches no object's prototype.
 */
export async function parseFeed(xml: string): Promise<ParsedFeed> {
  // A parser per feed: rss-parser reuses one xml2js parser, and after a failed document that
  // parser accepts the next one in a half-reset state (the same billion-laughs feed then
  // "parses", entities left as text). Feeds must not influence each other.
  // rss-parser (xml2js, sax) is loaded with the first feed, not by every process that imports triggers.
  const { default: Parser } = await import("rss-parser");
  const feed = await new Parser(PARSER_OPTIONS).parseString(xml);
  return { title: str(feed.title), items: (feed.items ?? []) as unknown as RawItem[] };
}

const str = (v: unknown): string | null => (typeof v === "string" && v.trim() !== "" ? v.trim() : null);

function categoriesOf(item: RawItem): string[] {
  const out: string[] = [];
  const add = (c: unknown) => {
    const text = typeof c === "string" ? c : c && typeof c === "object" ? (c as { _?: unknown; $?: { term?: unknown } })._ ?? (c as { $?: { term?: unknown } }).$?.term : undefined;
    if (typeof text === "string" && text.trim() && !out.includes(text.trim())) out.push(text.trim());
  };
  if (Array.isArray(item.categories)) item.categories.forEach(add);
  if (Array.isArray(item.rawCategories)) item.rawCategories.forEach(add);
  return out;
}

/** guid, else id, else link, else SHA-256 of title + published. */
export function itemKey(item: RawItem): string {
  const key = str(item.guid) ?? str(item.id) ?? str(item.link);
  if (key !== null) return key.length <= MAX_KEY_LENGTH ? key : `sha256:${sha256(key)}`;
  return `sha256:${sha256(`${str(item.title) ?? ""}${str(item.isoDate) ?? str(item.pubDate) ?? ""}`)}`;
}

const sha256 = (s: string): string => createHash("sha256").update(s).digest("hex");

/** The feed's items as ingredients, in feed order. Pure. */
export function feedItems(feed: ParsedFeed, feedUrl: string): FeedItem[] {
  return feed.items.map((item) => {
    const iso = str(item.isoDate);
    const date = iso ? new Date(iso) : null;
    const published = date && !Number.isNaN(date.getTime()) ? date : null;
    const content = str(item["content:encoded"]) ?? str(item.content) ?? str(item.summary) ?? "";
    const text = stripHtml(content).replace(/\s+/g, " ").trim();
    return {
      key: itemKey(item),
      published,
      payload: {
        title: str(item.title) ?? "",
        link: str(item.link) ?? "",
        content,
        summary: Array.from(text).slice(0, SUMMARY_CHARS).join(""),
        author: str(item.creator) ?? str(item["dc:creator"]) ?? str(item.author),
        published_at: published ? published.toISOString() : null,
        categories: categoriesOf(item),
        feed_title: feed.title ?? "",
        feed_url: feedUrl,
      },
    };
  });
}

/**
 * Which items fire, and the seen keys to store (newest last, capped at 500). The first poll ever
 * (no seen keys) only remembers, unless `fireOnFirstPoll`. New items fire oldest first: by
 * published date when every new item has one, else in reverse feed order (feeds list newest
 * first). At most `maxItems` fire: the newest ones, so a feed that rewrites its ids does not
 * replay its whole history; every new key is remembered either way. Pure.
 */
export function selectNewItems(
  items: FeedItem[],
  seenKeys: string[],
  opts: { fireOnFirstPoll: boolean; maxItems: number },
): { fire: FeedItem[]; seenKeys: string[]; dropped: number } {
  const seen = new Set(seenKeys);
  const fresh: FeedItem[] = [];
  for (const item of items) {
    if (seen.has(item.key)) continue;
    seen.add(item.key); // the same key twice in one feed fires once
    fresh.push(item);
  }
  const reversed = fresh.reverse();
  const ordered = reversed.every((i) => i.published !== null)
    ? reversed
        .map((item, index) => ({ item, index }))
        .sort((a, b) => a.item.published!.getTime() - b.item.published!.getTime() || a.index - b.index)
        .map((x) => x.item)
    : reversed;
  const nextSeen = [...seenKeys, ...ordered.map((i) => i.key)].slice(-LIMITS.seenKeys);
  if (seenKeys.length === 0 && !opts.fireOnFirstPoll) return { fire: [], seenKeys: nextSeen, dropped: 0 };
  const fire = ordered.slice(-opts.maxItems);
  return { fire, seenKeys: nextSeen, dropped: ordered.length - fire.length };
}

type FetchOutcome = { notModified: true } | { notModified: false; feed: ParsedFeed; etag: string | null; lastModified: string | null };

async function fetchFeed(url: string, ctx: PollContext, cache: { etag: string | null; lastModified: string | null } | null): Promise<FetchOutcome> {
  const headers: Record<string, string> = { accept: "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5" };
  if (cache?.etag) headers["if-none-match"] = cache.etag;
  if (cache?.lastModified) headers["if-modified-since"] = cache.lastModified;
  const res = await ctx.http(url, { headers, timeoutMs: FEED_TIMEOUT_MS, maxBytes: FEED_MAX_BYTES });
  if (res.status === 304 && cache) return { notModified: true };
  if (res.status < 200 || res.status > 299) throw new Error(`rss: ${url} answered HTTP ${res.status}`);
  if (res.truncated) throw new Error(`rss: ${url} is larger than ${FEED_MAX_BYTES / 1024 / 1024} MB; refusing a partial feed`);
  let feed: ParsedFeed;
  try {
    feed = await parseFeed(res.text());
  } catch (err) {
    throw new Error(`rss: ${url} is not a readable RSS or Atom feed: ${errorMessage(err).split("\n")[0]}`, { cause: err });
  }
  return { notModified: false, feed, etag: res.headers.etag ?? null, lastModified: res.headers["last-modified"] ?? null };
}

export const rssTrigger: TriggerPlugin<RssConfig> = {
  type: "rss",
  label: "RSS / Atom feed",
  description: "Fires once for every new item in a feed.",
  configSchema: rssConfigSchema,
  fields: [
    { name: "url", label: "Feed URL", kind: "text", required: true, placeholder: "https://example.com/feed.xml" },
    { name: "interval_min", label: "Check every (minutes)", kind: "number", placeholder: "15", help: "At least 5. After 3 failed checks in a row the feed is checked hourly until it works again." },
    { name: "fire_on_first_poll", label: "Fire for the items already in the feed", kind: "boolean", help: "Off: the first check only remembers what is there, and later items fire." },
    { name: "max_items_per_poll", label: "Most items per check", kind: "number", placeholder: "20", help: "1–100. If more are new at once, the newest fire." },
  ],
  ingredients: [
    { name: "title", description: "Item title" },
    { name: "link", description: "Item URL" },
    { name: "content", description: "Full content (or description) as HTML" },
    { name: "summary", description: "First 300 characters of the content, HTML removed" },
    { name: "author", description: "Author, or null" },
    { name: "published_at", description: "Publication time (ISO UTC), or null when the feed has none" },
    { name: "categories", description: "Categories (array)" },
    { name: "feed_title", description: "The feed's title" },
    { name: "feed_url", description: "The feed URL" },
  ],
  sample: {
    title: "Rebuilding the garden irrigation controller",
    link: "https://blog.example.com/2026/03/irrigation-controller",
    content: "<p>The old controller died after <strong>six winters</strong>. This time it runs on a microcontroller with a watchdog.</p>",
    summary: "The old controller died after six winters. This time it runs on a microcontroller with a watchdog.",
    author: "Ada Lovelace",
    published_at: "2026-03-07T18:30:00.000Z",
    categories: ["hardware", "garden"],
    feed_title: "Field Notes",
    feed_url: "https://blog.example.com/feed.xml",
  },

  nextRunAt: (config, from, state) =>
    nextRunAfter({ ...rssTiming(config, state), nextRunAt: state.nextRunAt ? new Date(state.nextRunAt) : undefined }, from),

  async poll(config, state, ctx) {
    const polledAt = ctx.clock.now().toISOString();
    let outcome: FetchOutcome;
    try {
      outcome = await fetchFeed(config.url, ctx, { etag: state.etag, lastModified: state.lastModified });
    } catch (err) {
      return { events: [], state: { lastPolledAt: polledAt, lastError: errorMessage(err), errorCount: state.errorCount + 1 } };
    }
    // 304: the server says nothing changed, which is also a success (it ends a back-off).
    if (outcome.notModified) return { events: [], state: { lastPolledAt: polledAt, ...(state.errorCount > 0 ? { lastError: null, errorCount: 0 } : {}) } };
    const items = feedItems(outcome.feed, config.url);
    const chosen = selectNewItems(items, state.seenKeys, { fireOnFirstPoll: config.fire_on_first_poll, maxItems: config.max_items_per_poll });
    if (chosen.dropped > 0) ctx.log.warn("rss: more new items than max_items_per_poll; the oldest were skipped", { url: config.url, skipped: chosen.dropped });
    return {
      events: chosen.fire.map((item) => ({ dedupeKey: item.key, payload: item.payload })),
      state: { lastPolledAt: polledAt, seenKeys: chosen.seenKeys, etag: outcome.etag, lastModified: outcome.lastModified, lastError: null, errorCount: 0 },
    };
  },

  async preview(config, ctx) {
    const outcome = await fetchFeed(config.url, ctx, null);
    if (outcome.notModified) throw new Error("rss: unexpected 304 without a conditional request");
    const items = feedItems(outcome.feed, config.url);
    return {
      feed_title: outcome.feed.title,
      item_count: items.length,
      items: items.slice(0, 3).map((i) => ({ key: i.key, ...i.payload })),
    };
  },
};
