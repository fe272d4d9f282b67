import type FeedParser from "feedparser";
import { recordConstructs, recordedContent, recordedTitle, type RecordedEntry } from "./markup";

/**
 * Feed text → the fields the RSS trigger needs, for every format in use: RSS 0.9x, 1.0 (RDF, with
 * or without `rdf:`/`rss:` prefixes) and 2.0 (with or without a `version`), Atom 0.3 and 1.0, and
 * JSON Feed 1.0 and 1.1, and Microsoft's CDF. XML goes through feedparser (sax, lenient: an
 * unescaped `&` or a stray unclosed tag does not lose the feed), chosen by measurement against
 * rss-parser, feedsmith and @rowanmanning/feed-parser on fixtures/corpus (bench/RESULTS.md, "feeds")
 * and on feedparser's (Python) own tests (fixtures/feedparser/README.md); titles and contents are
 * read from the same sax events by lib/feeds/markup, which keeps them as written.
 *
 * Dates are kept as the text the feed wrote, every candidate in order of preference; the trigger
 * reads them with lib/core/dates (feedparser's own reading depends on the host's zone).
 */

export type FeedFormat = "rss" | "atom" | "rdf" | "json";

export interface FeedEntry {
  /** RSS `<guid>` text (attributes such as isPermaLink ignored). */
  guid: string | null;
  /** Atom `<id>` text, JSON Feed `id`. */
  id: string | null;
  /** The item's URL, resolved against xml:base and the feed URL; a permalink guid when there is no link. */
  link: string | null;
  title: string | null;
  /** HTML (or text) of the fullest content: content:encoded, Atom content, description, summary. */
  content: string | null;
  author: string | null;
  categories: string[];
  /** Date texts as written, most wanted first: published, then updated. */
  dates: { field: string; text: string }[];
}

export interface ParsedFeed {
  format: FeedFormat;
  title: string | null;
  items: FeedEntry[];
}

/** Thrown for input that is no feed; the message says what was found, in the user's words. */
export class FeedFormatError extends Error {
  override name = "FeedFormatError";
}

const text = (v: unknown): string | null => {
  const s = typeof v === "string" ? v : typeof v === "number" ? String(v) : null;
  return s !== null && s.trim() !== "" ? s.trim() : null;
};

export async function readFeed(source: string, opts: { feedUrl?: string } = {}): Promise<ParsedFeed> {
  const start = source.trimStart();
  if (start.startsWith("{")) return readJsonFeed(start);
  checkNoEntityDeclarations(source);
  return readXmlFeed(withReadableRoot(source), opts.feedUrl);
}

/**
 * A DOCTYPE that declares its own entities is refused: it is how billion-laughs documents blow up
 * parsers, and no real feed needs one (the HTML entities of the RSS 0.91 DTD are known without it).
 */
function checkNoEntityDeclarations(source: string): void {
  const doctype = /<!DOCTYPE[^[>]*\[([\s\S]*?)\]\s*>/i.exec(source.slice(0, 64 * 1024));
  if (doctype && /<!ENTITY/i.test(doctype[1]!)) {
    throw new FeedFormatError("its DOCTYPE declares its own entities (<!ENTITY …>), which are refused: they can expand without limit");
  }
}

const ATOM_10 = "http://www.w3.org/2005/Atom";
const ATOM_03 = "http://purl.org/atom/ns#";

/**
 * Roots feedparser does not take for a feed, said as ones it does: a `<feed>` in no namespace or in
 * one of Atom's pre-1.0 drafts' (`http://purl.org/echo/`, `…/pie/`, `…/necho`) is Atom, 0.3 when it
 * says `version="0.3"` (only the root tag changes); in a prefixed RSS document (`<r:rss
 * xmlns:r="…"><r:channel>…`) the prefix's elements are RSS's own, read unprefixed.
 */
function withReadableRoot(source: string): string {
  const root = /<(?![?!])([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)((?:\s[^>]*)?)>/.exec(source);
  if (!root) return source;
  const [tag, prefix, local, attrs] = root as unknown as [string, string | undefined, string, string];
  let replacement: string | null = null;
  if (local === "feed" && !prefix) {
    const ns = /\sxmlns\s*=\s*["']([^"']*)["']/.exec(attrs)?.[1];
    if (ns === ATOM_10 || ns === ATOM_03) return source;
    const atom = /\sversion\s*=\s*["']0\.3["']/.test(attrs) ? ATOM_03 : ATOM_10;
    replacement = ns === undefined ? `<feed xmlns="${atom}"${attrs}>` : tag.replace(/(\sxmlns\s*=\s*["'])[^"']*/, `$1${atom}`);
  } else if (local.toLowerCase() === "channel" && !prefix) {
    // Microsoft's CDF (<CHANNEL><ITEM HREF=…><TITLE>…): its elements are RSS's, under another root.
    return `${source.slice(0, root.index)}<rss version="2.0">${source.slice(root.index)}</rss>`;
  } else if (local === "rss" && prefix) {
    // The prefix names RSS's own elements (channel, item, title …): they are read unprefixed.
    const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return source.replace(new RegExp(`(</?)${escaped}(?=[A-Za-z_])`, "g"), "$1");
  }
  if (replacement === null) return source;
  return source.slice(0, root.index) + replacement + source.slice(root.index + tag.length);
}

type RawValue = { "#"?: unknown; "@"?: Record<string, unknown> } | RawValue[] | string | null | undefined;
type FpItem = FeedParser.Item & Record<string, unknown>;

const first = (v: RawValue): Exclude<RawValue, RawValue[]> => (Array.isArray(v) ? first(v[0]) : v);
const rawText = (v: RawValue): string | null => {
  const f = first(v);
  return typeof f === "string" ? text(f) : f ? text(f["#"]) : null;
};
const rawAttr = (v: RawValue, name: string): string | null => {
  const f = first(v);
  return f && typeof f === "object" ? text(f["@"]?.[name]) : null;
};

// Local names of date elements in any namespace (a feed may put Atom's <updated> in RSS under any
// prefix), most wanted first: when the item was published, then when it changed.
const DATE_FIELDS = ["pubdate", "published", "issued", "date", "created", "updated", "modified"];

async function readXmlFeed(source: string, feedUrl: string | undefined): Promise<ParsedFeed> {
  // feedparser (sax, its entity tables) is loaded with the first feed, not by every process that
  // imports the triggers (the web process and a worker without feeds never need it).
  const { default: FeedParserClass } = await import("feedparser");
  return new Promise((resolve, reject) => {
    const parser = new FeedParserClass({ addmeta: false, ...(feedUrl ? { feedurl: feedUrl } : {}) });
    const items: FeedEntry[] = [];
    let failed = false;
    parser.on("error", (err: Error) => {
      if (failed) return;
      failed = true;
      reject(err instanceof FeedFormatError ? err : describeXmlError(err, source));
    });
    watchShape(parser);
    // Titles and contents are read from the XML events as written (lib/feeds/markup): feedparser flattens them.
    const constructs = recordConstructs((parser as unknown as { stream: NodeJS.EventEmitter }).stream);
    parser.on("readable", () => {
      let item: FeedParser.Item | null;
      while ((item = parser.read()) !== null) items.push(entryOf(item, String(parser.meta["#type"] ?? "rss") === "atom", constructs.entries[items.length]));
    });
    parser.on("end", () => {
      if (failed) return;
      const meta = parser.meta;
      const type = String(meta["#type"] ?? "rss");
      const format: FeedFormat = type === "atom" ? "atom" : type === "rdf" ? "rdf" : "rss";
      resolve({ format, title: recordedTitle(constructs.feed) ?? text(meta.title) ?? rawText(meta["dc:title"] as RawValue), items });
    });
    void feedInChunks(parser, source);
  });
}

/**
 * How deep a feed may nest and how many elements it may have. Real feeds nest about 10 levels (30
 * with xhtml content) and a 5 MB feed of 5,000 items has about 60,000 elements; libxml2 refuses
 * documents deeper than 256 too. Past either bound the document is refused at once, while it is
 * being read: feedparser keeps its open elements in an array it prepends to, so each level costs
 * as much as all the levels above it, and 200,000 levels took minutes.
 */
export const FEED_MAX_DEPTH = 256;
export const FEED_MAX_ELEMENTS = 250_000;

/** Counts the elements as sax reads them and stops the parse at the first one past a bound. */
function watchShape(parser: FeedParser): void {
  const sax = (parser as unknown as { stream: NodeJS.EventEmitter }).stream;
  let depth = 0;
  let elements = 0;
  sax.on("opentag", () => {
    depth++;
    elements++;
    // Thrown inside sax's write: it ends the parse of this slice at once, and feedparser hands the
    // error to its "error" event.
    if (depth > FEED_MAX_DEPTH) throw new FeedFormatError(`the feed nests deeper than ${FEED_MAX_DEPTH} levels, which no real feed does; it was not read`);
    if (elements > FEED_MAX_ELEMENTS) throw new FeedFormatError(`the feed has more than ${FEED_MAX_ELEMENTS.toLocaleString("en-US")} elements, which no real feed needs; it was not read`);
  });
  sax.on("closetag", () => {
    depth--;
  });
}

/**
 * feedparser reads about 1 MB per second here, all of it synchronously: a 5 MB feed written at
 * once would stall the worker's event loop (runs, the SMTP receiver) for seconds. Written in
 * slices with a turn of the event loop between them, nothing else waits more than one slice.
 */
const SLICE_CHARS = 64 * 1024;
async function feedInChunks(parser: FeedParser, source: string): Promise<void> {
  for (let i = 0; i < source.length; i += SLICE_CHARS) {
    if (parser.destroyed) return;
    parser.write(source.slice(i, i + SLICE_CHARS));
    if (i + SLICE_CHARS < source.length) await new Promise((resolve) => setImmediate(resolve));
  }
  parser.end();
}

function entryOf(item: FpItem, atom: boolean, recorded: RecordedEntry | undefined): FeedEntry {
  const keys = Object.keys(item);
  // feedparser hands down the channel's author (even its webMaster) to every item. Atom says an
  // entry without an author has the feed's (RFC 4287 §4.2.1); RSS says nothing of the kind, so
  // there an item's author is its own <author>, <dc:creator> or the like, or none.
  const ownAuthor = atom || keys.some((k) => /:(author|creator)$/.test(k));
  const dates: { field: string; text: string }[] = [];
  for (const local of DATE_FIELDS) {
    for (const key of keys) {
      if (!key.endsWith(`:${local}`)) continue;
      const t = rawText(item[key] as RawValue);
      if (t !== null && !dates.some((d) => d.text === t)) dates.push({ field: key, text: t });
    }
  }
  const lastmod = recorded?.attributes.lastmod?.trim();
  if (lastmod) dates.push({ field: "lastmod", text: lastmod });
  return {
    guid: rawText(item["rss:guid"] as RawValue),
    // An RSS 1.0 item is identified by its rdf:about.
    id: rawText(item["atom:id"] as RawValue) ?? text((item["rdf:@"] as Record<string, unknown> | undefined)?.about),
    link: text(item.link) ?? text(item.origlink) ?? atomLinkText(item) ?? recorded?.attributes.href ?? null,
    title: recordedTitle(recorded?.constructs) ?? text(item.title) ?? rawText(item["dc:title"] as RawValue),
    content: recordedContent(recorded?.constructs) ?? text(item.description) ?? text(item.summary),
    // feedparser takes an empty <dc:creator/> over a written <author>; the first one with text wins.
    author: ownAuthor ? (atomAuthor(item) ?? text(item.author) ?? firstText(item, ["rss:author", "dc:creator", "dc:author", "itunes:author"])) : null,
    categories: categoriesOf(item),
    dates,
  };
}

/** An Atom author as feedparser and mail headers write one: `Name (email)`, or the name alone. */
function atomAuthor(item: FpItem): string | null {
  const author = first(item["atom:author"] as RawValue);
  if (!author || typeof author !== "object") return null;
  const parts = author as Record<string, RawValue>;
  const name = rawText(parts.name);
  const email = rawText(parts.email);
  return name && email ? `${name} (${email})` : (name ?? email);
}

/** The first of these raw elements that has text. */
function firstText(item: FpItem, keys: string[]): string | null {
  for (const k of keys) {
    const t = rawText(item[k] as RawValue);
    if (t !== null) return t;
  }
  return null;
}


/**
 * An item's categories: RSS <category>, Dublin Core <dc:subject> (a whole subject each: feedparser
 * splits it into words) and Atom <category term>, each once, in that order.
 */
function categoriesOf(item: FpItem): string[] {
  const all = (v: RawValue): RawValue[] => (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]);
  const out: string[] = [];
  for (const v of all(item["rss:category"] as RawValue)) out.push(rawText(v) ?? "");
  for (const v of all(item["dc:subject"] as RawValue)) out.push(rawText(v) ?? "");
  for (const v of all(item["atom:category"] as RawValue)) out.push(rawAttr(v, "term") ?? rawAttr(v, "label") ?? rawText(v) ?? "");
  // Anything else feedparser found (media:category, itunes:category …) after those.
  for (const c of item.categories ?? []) if (!item["dc:subject"]) out.push(text(c) ?? "");
  return [...new Set(out.filter((c) => c !== ""))];
}

/**
 * An Atom link written as text instead of an href (`<link rel="alternate">http://…</link>`, seen
 * in old feeds): feedparser drops it; the alternate one (or one without a rel) is the item's link.
 */
function atomLinkText(item: FpItem): string | null {
  const links = item["atom:link"] as RawValue;
  const all = Array.isArray(links) ? links : links ? [links] : [];
  const alternate = all.find((l) => (rawAttr(l, "rel") ?? "alternate") === "alternate" && rawAttr(l, "href") === null);
  return alternate === undefined ? null : rawText(alternate);
}

/** feedparser's and sax's messages, said about the user's document. */
function describeXmlError(err: Error, source: string): FeedFormatError {
  const message = err.message.split("\n")[0] ?? "";
  if (/not a feed/i.test(message)) {
    const head = source.trimStart().slice(0, 200).toLowerCase();
    const what = /^<(!doctype html|html|head|body)\b/.test(head) ? "an HTML page" : head.startsWith("<") ? "XML without an <rss>, <feed> or <rdf:RDF> root" : "text that is not XML";
    return new FeedFormatError(`it is not an RSS, Atom or JSON feed (it looks like ${what})`, { cause: err });
  }
  const line = /Line:\s*(\d+)/.exec(err.message)?.[1];
  const column = /Column:\s*(\d+)/.exec(err.message)?.[1];
  const where = line ? ` at line ${Number(line) + 1}${column ? `, column ${column}` : ""}` : "";
  return new FeedFormatError(`its XML cannot be read${where}: ${message}`, { cause: err });
}

function readJsonFeed(source: string): ParsedFeed {
  let doc: unknown;
  try {
    doc = JSON.parse(source);
  } catch (err) {
    throw new FeedFormatError(`it starts like JSON but is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const feed = doc as Record<string, unknown>;
  const version = typeof feed?.version === "string" ? feed.version : "";
  if (!/^https?:\/\/jsonfeed\.org\/version\/1(\.\d+)?$/.test(version)) {
    throw new FeedFormatError(`it is JSON but not a JSON Feed: "version" should be "https://jsonfeed.org/version/1.1", got ${JSON.stringify(feed?.version ?? null)}`);
  }
  if (feed.items !== undefined && !Array.isArray(feed.items)) throw new FeedFormatError('it is a JSON Feed whose "items" is not an array');
  const items = ((feed.items as unknown[]) ?? []).filter((i): i is Record<string, unknown> => typeof i === "object" && i !== null && !Array.isArray(i));
  return {
    format: "json",
    title: text(feed.title),
    items: items.map((item) => ({
      guid: null,
      id: text(item.id),
      link: text(item.url) ?? text(item.external_url),
      title: text(item.title),
      content: text(item.content_html) ?? text(item.content_text) ?? text(item.summary),
      author: jsonAuthor(item) ?? jsonAuthor(feed),
      categories: Array.isArray(item.tags) ? [...new Set(item.tags.map(text).filter((t): t is string => t !== null))] : [],
      dates: (["date_published", "date_modified"] as const).flatMap((field) => {
        const t = text(item[field]);
        return t === null ? [] : [{ field, text: t }];
      }),
    })),
  };
}

/** JSON Feed 1.1 `authors` (an array), or 1.0 `author` (one object). */
function jsonAuthor(o: Record<string, unknown>): string | null {
  const list = Array.isArray(o.authors) ? o.authors : o.author ? [o.author] : [];
  const names = list.map((a) => (a && typeof a === "object" ? text((a as Record<string, unknown>).name) : null)).filter((n): n is string => n !== null);
  return names.length ? names.join(", ") : null;
}
