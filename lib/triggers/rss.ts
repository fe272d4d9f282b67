import { toText } from "../core/text";
import { createHash } from "node:crypto";
import type { ScheduleTiming } from "@whenthen/schedules";
import { z } from "zod";
import { parseDateText } from "../core/dates";
import { errorMessage } from "../core/errors";
import { LIMITS } from "../core/limits";
import { decodeFeed } from "../feeds/decode";
import { FeedFormatError, readFeed, type FeedEntry, type ParsedFeed } from "../feeds/read";
import { readFeedOffThread } from "../feeds/thread";
import { stripHtml } from "../template/filters";
import { field } from "../plugin";
import type { PolledTrigger, PollContext, TriggerState } from "./types";

/**
 * The feed trigger: RSS 0.9x/1.0/2.0, Atom 0.3/1.0 and JSON Feed 1.0/1.1 all give the same
 * ingredients (listed below). Fetching is the only I/O; turning a feed into items and deciding
 * which of them are new are pure functions (`parseFeed`, `feedItems`, `selectNewItems`) tested on
 * their own.
 *
 * An item's date is its first readable one (published, pubDate, dc:date, dcterms:issued …, then
 * updated/modified), read by lib/core/dates: a date without a zone is UTC. An unreadable date
 * gives that item `published_at: null` and a warning in the log, never a failed feed.
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
  url: field(httpUrl, { label: "Feed URL", kind: "text", required: true, placeholder: "https://example.com/feed.xml" }),
  interval_min: field(z.number().int().min(5, "at least 5 minutes").max(10_080).default(RSS_DEFAULT_INTERVAL_MIN), {
    label: "Check every (minutes)",
    kind: "number",
    placeholder: "15",
    help: "At least 5. After 3 failed checks in a row the feed is checked hourly until it works again.",
  }),
  fire_on_first_poll: field(z.boolean().default(false), {
    label: "Fire for the items already in the feed",
    kind: "boolean",
    help: "Off: the first check only remembers what is there, and later items fire.",
  }),
  max_items_per_poll: field(z.number().int().min(1).max(100).default(20), {
    label: "Most items per check",
    kind: "number",
    placeholder: "20",
    help: "1–100. If more are new at once, the newest fire.",
  }),
});
export type RssConfig = z.infer<typeof rssConfigSchema>;

/** Polling cadence: the configured interval, or hourly after 3 consecutive errors. */
export const rssTiming = (config: RssConfig, state: Pick<TriggerState, "errorCount">): ScheduleTiming => ({
  interval: `${state.errorCount >= RSS_BACKOFF_AFTER_ERRORS ? RSS_BACKOFF_MINUTES : config.interval_min}m`,
});

export interface FeedItem {
  key: string;
  /** null when the item has no readable date. */
  published: Date | null;
  payload: Record<string, unknown>;
  /** What could not be read in this item (an unreadable date); the item still fires. */
  warnings?: string[];
}

export type { ParsedFeed } from "../feeds/read";

/**
 * Bytes or text → feed. Bytes are decoded by the HTTP charset, the XML declaration or a BOM
 * (lib/feeds/decode); the formats read are those of lib/feeds/read. A DOCTYPE declaring its own
 * entities (a billion-laughs document) is refused before parsing, and no element name reaches an
 * object key, so a `<__proto__>` element touches no prototype.
 */
export async function parseFeed(input: string | Buffer, opts: { contentType?: string; feedUrl?: string } = {}): Promise<ParsedFeed> {
  const source = typeof input === "string" ? input : decodeFeed(input, opts.contentType).text;
  return readFeed(source, { feedUrl: opts.feedUrl });
}

const str = (v: unknown): string | null => (typeof v === "string" && v.trim() !== "" ? v.trim() : null);

/** guid, else id, else link, else SHA-256 of title + published. */
export function itemKey(item: { guid?: unknown; id?: unknown; link?: unknown; title?: unknown; isoDate?: unknown; pubDate?: unknown }): string {
  const key = str(item.guid) ?? str(item.id) ?? str(item.link);
  if (key !== null) return key.length <= MAX_KEY_LENGTH ? key : `sha256:${sha256(key)}`;
  return `sha256:${sha256(`${str(item.title) ?? ""}${str(item.isoDate) ?? str(item.pubDate) ?? ""}`)}`;
}

const sha256 = (s: string): string => createHash("sha256").update(s).digest("hex");

/**
 * The first readable date of an entry (published before updated), and a warning for each date
 * text that could not be read. A date without a zone is UTC (lib/core/dates).
 */
function publishedOf(entry: FeedEntry): { published: Date | null; warnings: string[] } {
  const warnings: string[] = [];
  for (const d of entry.dates) {
    const date = parseDateText(d.text);
    if (date) return { published: date, warnings };
    warnings.push(`unreadable date in <${d.field}>: ${JSON.stringify(d.text.slice(0, 80))}`);
  }
  return { published: null, warnings };
}

/** The feed's items as ingredients, in feed order. Pure. */
export function feedItems(feed: ParsedFeed, feedUrl: string): FeedItem[] {
  return feed.items.map((entry) => {
    const { published, warnings } = publishedOf(entry);
    const content = entry.content ?? "";
    const text = stripHtml(content);
    return {
      key: itemKey({ guid: entry.guid, id: entry.id, link: entry.link, title: entry.title, isoDate: published?.toISOString(), pubDate: entry.dates[0]?.text }),
      published,
      warnings,
      payload: {
        title: entry.title ?? "",
        link: entry.link ?? "",
        content,
        summary: Array.from(text).slice(0, SUMMARY_CHARS).join(""),
        author: entry.author,
        published_at: published ? published.toISOString() : null,
        categories: entry.categories,
        feed_title: feed.title ?? "",
        feed_url: feedUrl,
      },
    };
  });
}

/**
 * Which items fire, and the seen keys to store. An item still in the feed is never new again:
 * the stored keys are every key of this fetch plus a history of at most 500 keys seen before
 * that are no longer in the feed (an item that drops out and comes back does not fire again while
 * its key is in the history). Stored oldest first, so the history loses its oldest keys first; the
 * whole list is bounded by the feed's own size (FEED_MAX_BYTES) plus 500.
 *
 * The first poll ever (no seen keys) only remembers, unless `fireOnFirstPoll`. New items fire
 * oldest first: by published date when every new item has one, else in reverse feed order
 * (feeds list newest first). At most `maxItems` fire: the newest ones, so a feed that rewrites
 * its ids does not replay its whole history; every new key is remembered either way. Pure.
 */
export function selectNewItems(
  items: FeedItem[],
  seenKeys: string[],
  opts: { fireOnFirstPoll: boolean; maxItems: number },
): { fire: FeedItem[]; seenKeys: string[]; dropped: number } {
  const seen = new Set(seenKeys);
  const current = new Set<string>();
  const fresh: FeedItem[] = [];
  for (const item of items) {
    if (current.has(item.key)) continue; // the same key twice in one feed fires once
    current.add(item.key);
    if (!seen.has(item.key)) fresh.push(item);
  }
  const reversed = fresh.reverse();
  const ordered = reversed.every((i) => i.published !== null)
    ? reversed
        .map((item, index) => ({ item, index }))
        .sort((a, b) => a.item.published!.getTime() - b.item.published!.getTime() || a.index - b.index)
        .map((x) => x.item)
    : reversed;
  const history = seenKeys.filter((k) => !current.has(k)).slice(-LIMITS.seenKeys);
  const nextSeen = [...history, ...[...current].reverse()];
  if (seenKeys.length === 0 && !opts.fireOnFirstPoll) return { fire: [], seenKeys: nextSeen, dropped: 0 };
  const fire = ordered.slice(-opts.maxItems);
  return { fire, seenKeys: nextSeen, dropped: ordered.length - fire.length };
}

type FetchOutcome = { notModified: true } | { notModified: false; feed: ParsedFeed; etag: string | null; lastModified: string | null };

async function fetchFeed(url: string, ctx: PollContext, cache: { etag: string | null; lastModified: string | null } | null): Promise<FetchOutcome> {
  const headers: Record<string, string> = { accept: "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.5" };
  if (cache?.etag) headers["if-none-match"] = cache.etag;
  if (cache?.lastModified) headers["if-modified-since"] = cache.lastModified;
  const res = await ctx.http(url, { headers, timeoutMs: FEED_TIMEOUT_MS, maxBytes: FEED_MAX_BYTES });
  if (res.status === 304 && cache) return { notModified: true };
  if (res.status < 200 || res.status > 299) throw new Error(`rss: ${url} answered HTTP ${res.status}`);
  if (res.truncated) throw new Error(`rss: ${url} is larger than ${FEED_MAX_BYTES / 1024 / 1024} MB; refusing a partial feed`);
  let feed: ParsedFeed;
  try {
    // Off the event loop, bounded in time (lib/feeds/thread): the document is a stranger's.
    feed = await readFeedOffThread(res.body, { contentType: res.headers["content-type"], feedUrl: res.url || url });
  } catch (err) {
    // A FeedFormatError describes the document; anything else is a fault of ours, said as one.
    const reason = err instanceof FeedFormatError ? err.message : `reading it failed unexpectedly (a bug in whenthen: ${errorMessage(err).split("\n")[0]})`;
    throw new Error(`rss: ${url} is not a readable feed: ${reason}`, { cause: err });
  }
  return { notModified: false, feed, etag: res.headers.etag ?? null, lastModified: res.headers["last-modified"] ?? null };
}

/** Logs each unreadable date once per poll, naming the feed and the item. */
function warnAboutItems(items: FeedItem[], url: string, ctx: PollContext): void {
  for (const item of items) {
    for (const warning of item.warnings ?? []) ctx.log.warn(`rss: ${warning}; published_at is null for this item`, { url, item: item.key });
  }
}

export const rssTrigger: PolledTrigger<RssConfig, "rss"> = {
  type: "rss",
  feed: "polled",
  label: "RSS / Atom / JSON feed",
  description: "Fires once for every new item in a feed (RSS, Atom or JSON Feed).",
  configSchema: rssConfigSchema,
  exampleConfig: { url: "https://blog.example.com/feed.xml", interval_min: 15, fire_on_first_poll: false, max_items_per_poll: 20 },
  urlFields: ["url"],
  previewReads: ["url"],
  ingredients: [
    { name: "title", description: "Item title, as text (an HTML title without its tags)" },
    { name: "link", description: "Item URL" },
    { name: "content", description: "Full content (or description) as HTML" },
    { name: "summary", description: "First 300 characters of the content, HTML removed" },
    { name: "author", description: "Author, or null" },
    { name: "published_at", description: "Publication time (ISO UTC), or null when the item has no readable date; a date without a zone is read as UTC" },
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

  timing: rssTiming,
  timingOfInvalid: (raw) => ({ interval: `${toText(raw.interval_min ?? RSS_DEFAULT_INTERVAL_MIN)}m` }),
  // A feed is looked at right away; a lost slot is not polled again (its new items stay new).
  firstRun: "now",
  refireLostSlot: false,

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
    warnAboutItems(items, config.url, ctx);
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
      format: outcome.feed.format,
      item_count: items.length,
      items: items.slice(0, 3).map((i) => ({ key: i.key, ...i.payload })),
      warnings: items.flatMap((i) => (i.warnings ?? []).map((w) => `${i.key}: ${w}`)).slice(0, 20),
    };
  },
};
