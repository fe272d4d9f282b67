import { decodeHTML } from "entities";
import iconv from "iconv-lite";

/**
 * The title and content of the feed and of each entry, read from the XML events as written.
 * feedparser (npm) flattens them on its way: an XHTML title or content loses its escaped text
 * (`History of the &lt;blink&gt; tag` → `History of the <blink> tag`, so the "tag" vanishes when it
 * is shown), an Atom 0.3 `mode="xml"` title comes out empty, an HTML title keeps its character
 * references (`&#38;` instead of `&`), and text mixed with tags in a `<description>` loses its
 * order. This recorder listens to the same sax events feedparser does and keeps, for each text
 * construct of interest, its type and its inner XML serialised back, so each is read by its own
 * rules (RFC 4287 §3.1 for Atom, HTML for RSS).
 */

export interface SaxTag {
  name: string;
  local?: string;
  uri?: string;
  attributes: Record<string, string | { value: string; local?: string; uri?: string }>;
}

interface Construct {
  /** Atom's type (text, html, xhtml, or a media type); "html" for RSS's elements. */
  type: string;
  /** Atom 0.3's mode: xml, escaped or base64. */
  mode: string | null;
  /** The inner XML as written: text escaped, child elements serialised. */
  inner: string;
  /** The character data alone, as read (references decoded once, as XML does). */
  text: string;
  /** Whether a child element was seen (markup written straight into the element). */
  hasElements: boolean;
}

/** Which constructs are recorded, and which of an entry's give its content, fullest first. */
const CONTENT_ORDER = ["content:encoded", "content", "body", "fullitem", "description", "summary", "abstract", "dc:description"] as const;
type Kind = "title" | (typeof CONTENT_ORDER)[number];

const NS = {
  atom10: "http://www.w3.org/2005/Atom",
  atom03: "http://purl.org/atom/ns#",
  content: "http://purl.org/rss/1.0/modules/content/",
  xhtml: "http://www.w3.org/1999/xhtml",
  dc: "http://purl.org/dc/elements/1.1/",
};
const ATOM = new Set([NS.atom10, NS.atom03]);

/** Atom's, RSS's (no namespace, RSS 1.0's, Userland's, Netscape's 0.90) and CDF's own namespaces. */
const isFeedNamespace = (uri: string): boolean => uri === "" || ATOM.has(uri) || /rss|rdf|backend\.userland\.com|my\.netscape\.com/i.test(uri);

/** A recorded element's kind from its namespace and local name; null for elements not recorded. */
function kindOf(tag: SaxTag): Kind | null {
  const local = (tag.local ?? tag.name).toLowerCase();
  const uri = tag.uri ?? "";
  if (uri === NS.content && local === "encoded") return "content:encoded";
  if (uri === NS.xhtml) return local === "body" ? "body" : null;
  if (uri === NS.dc) return local === "description" ? "dc:description" : null;
  if (!isFeedNamespace(uri)) return null;
  if (local === "title") return "title";
  if (local === "content" || local === "summary" || local === "description" || local === "fullitem" || local === "abstract") return local;
  return null;
}

const ENTRY = new Set(["item", "entry"]);
const FEED = new Set(["channel", "feed"]);

const escapeText = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeAttr = (s: string): string => escapeText(s).replace(/"/g, "&quot;");

type Constructs = Partial<Record<Kind, Construct>>;
export interface RecordedEntry {
  constructs: Constructs;
  /** The entry element's own attributes, lower-cased (CDF writes an item's link and date there: HREF, LASTMOD). */
  attributes: Record<string, string>;
}
export interface RecordedConstructs {
  feed: Constructs;
  entries: RecordedEntry[];
}

/** Listens to a sax stream (opentag, text, cdata, closetag) and records the constructs. */
export function recordConstructs(sax: NodeJS.EventEmitter): RecordedConstructs {
  const out: RecordedConstructs = { feed: {}, entries: [] };
  const stack: string[] = [];
  let entryDepth = -1;
  let feedDepth = -1;
  // The construct being recorded, and how deep its element is.
  let open: { kind: Kind; depth: number; construct: Construct; target: Constructs } | null = null;

  sax.on("opentag", (tag: SaxTag) => {
    const local = (tag.local ?? tag.name).toLowerCase();
    stack.push(local);
    const depth = stack.length;
    if (open) {
      open.construct.hasElements = true;
      open.construct.inner += VOID.has(local) ? `<${local}${serialiseAttributes(tag)} />` : `<${local}${serialiseAttributes(tag)}>`;
      return;
    }
    // The items feedparser reads, in the same order: an <item> or <entry> unprefixed, or prefixed in a feed's namespace.
    if (ENTRY.has(local) && entryDepth === -1 && (!tag.name.includes(":") || isFeedNamespace(tag.uri ?? ""))) {
      entryDepth = depth;
      const attributes: Record<string, string> = {};
      for (const [key, a] of Object.entries(tag.attributes)) attributes[key.toLowerCase()] = typeof a === "object" ? a.value : a;
      out.entries.push({ constructs: {}, attributes });
      return;
    }
    if (FEED.has(local) && feedDepth === -1 && entryDepth === -1) feedDepth = depth;
    // Only an entry's own children (not a <source>'s or an <image>'s title), and the feed's.
    const target = entryDepth !== -1 && depth === entryDepth + 1 ? out.entries.at(-1)!.constructs : entryDepth === -1 && feedDepth !== -1 && depth === feedDepth + 1 ? out.feed : null;
    const kind = target ? kindOf(tag) : null;
    if (!target || !kind || target[kind]) return;
    open = { kind, depth, target, construct: { type: attr(tag, "type")?.toLowerCase() ?? "", mode: attr(tag, "mode")?.toLowerCase() ?? null, inner: "", text: "", hasElements: false } };
  });
  const onText = (raw: string) => {
    if (!open) return;
    const text = replaceInvalidCharacters(raw);
    open.construct.inner += escapeText(text);
    open.construct.text += text;
  };
  sax.on("text", onText);
  sax.on("cdata", onText);
  sax.on("closetag", () => {
    const depth = stack.length;
    const local = stack.pop();
    if (open && depth === open.depth) {
      open.target[open.kind] = open.construct;
      open = null;
    } else if (open && !VOID.has(local ?? "")) {
      open.construct.inner += `</${local}>`;
    }
    if (depth === entryDepth) entryDepth = -1;
    if (depth === feedDepth) feedDepth = -1;
  });
  return out;
}

/**
 * A character reference past U+10FFFF, or to a lone surrogate, names no character: sax leaves the
 * first as written and decodes the second to half a pair. Both become U+FFFD, as in HTML. The C1
 * controls U+0080–U+009F are what a reference such as `&#146;` gives when the feed meant the
 * windows-1252 character (’): no text means the controls, so they are read as HTML reads them.
 */
function replaceInvalidCharacters(text: string): string {
  return text
    .replace(/[\u0080-\u009f]/g, (c) => WINDOWS_1252_C1[c.charCodeAt(0) - 0x80] || c)
    .replace(/&#(?:x([0-9a-f]+)|([0-9]+));/gi, (ref, hex: string | undefined, dec: string | undefined) => (parseInt(hex ?? dec!, hex ? 16 : 10) > 0x10ffff ? "\ufffd" : ref))
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
}

/** Windows-1252's characters at 0x80–0x9F ("" where it has none), as the WHATWG Encoding Standard lists them. */
const WINDOWS_1252_C1 = Array.from(iconv.decode(Buffer.from(Array.from({ length: 32 }, (_, i) => 0x80 + i)), "windows-1252")).map((c, i) => (c.charCodeAt(0) === 0x80 + i ? "" : c));

const VOID = new Set(["br", "hr", "img", "input", "meta", "link", "area", "base", "col", "source", "wbr"]);

function attr(tag: SaxTag, name: string): string | null {
  for (const [key, a] of Object.entries(tag.attributes)) {
    const local = typeof a === "object" ? (a.local ?? key) : key;
    if (local.toLowerCase() === name && (typeof a !== "object" || !a.uri)) return typeof a === "object" ? a.value : a;
  }
  return null;
}

/** Attributes as HTML writes them; namespace declarations left out (they mean nothing in HTML). */
function serialiseAttributes(tag: SaxTag): string {
  let s = "";
  for (const [key, a] of Object.entries(tag.attributes)) {
    if (key === "xmlns" || key.startsWith("xmlns:")) continue;
    const name = typeof a === "object" && a.uri && a.local ? a.local : key;
    s += ` ${name}="${escapeAttr(typeof a === "object" ? a.value : a)}"`;
  }
  return s;
}

/** XHTML (Atom type="xhtml" or a +xml media type, Atom 0.3 mode="xml"): markup written as XML. */
function isXhtml(c: Construct): boolean {
  return c.type === "xhtml" || c.type.endsWith("+xml") || c.type.endsWith("/xml") || c.mode === "xml";
}

/**
 * Base64: Atom 0.3 says so with mode="base64"; Atom 1.0 with a media type that is neither text nor
 * XML (RFC 4287 §4.1.3.3).
 */
function isBase64(c: Construct): boolean {
  if (c.mode === "base64") return true;
  if (!c.type.includes("/") || c.type.startsWith("text/") || /[/+]xml(;|$)/.test(c.type)) return false;
  return /^[A-Za-z0-9+/=\s]*$/.test(c.text);
}

/** HTML carried as text: Atom type="html"/text/html, Atom 0.3 mode="escaped", and RSS's elements (kind decides). */
function isHtml(c: Construct, kind: Kind): boolean {
  if (c.type === "html" || c.type === "text/html" || c.mode === "escaped") return true;
  if (c.type !== "") return false;
  // No type: RSS's description, content:encoded, fullitem and xhtml:body are HTML; Atom's and RSS's titles and Atom 0.3's content are text.
  return kind !== "title" && kind !== "content" && kind !== "summary";
}

/**
 * A construct as HTML (what whenthen's content is). XHTML and markup written straight into an
 * element are their inner XML; HTML carried as text is that text; plain text is escaped; base64
 * (Atom 0.3 mode="base64") is decoded.
 */
export function constructHtml(c: Construct, kind: Kind): string {
  if (isBase64(c)) return Buffer.from(c.text.replace(/\s+/g, ""), "base64").toString("utf8");
  if (isXhtml(c) || c.hasElements) return c.inner.trim();
  if (isHtml(c, kind)) return c.text.trim();
  return c.inner.trim();
}

/** A construct as text (what whenthen's title is): markup's tags dropped and its references decoded. */
export function constructText(c: Construct, kind: Kind): string {
  if (isBase64(c)) return constructHtml(c, kind).trim();
  if (isXhtml(c) || c.hasElements) return htmlToText(c.inner);
  return isHtml(c, kind) ? htmlToText(c.text) : c.text.replace(/\s+/g, " ").trim();
}

/** Tags (their attribute values may hold `>`) dropped, references decoded, whitespace collapsed. */
function htmlToText(html: string): string {
  return decodeHTML(html.replace(/<[A-Za-z/!?](?:[^>"']|"[^"]*"|'[^']*')*>/g, "")).replace(/\s+/g, " ").trim();
}

/** An entry's (or the feed's) title as text, or null when it has none recorded. */
export function recordedTitle(constructs: Constructs | undefined): string | null {
  const c = constructs?.title;
  if (!c) return null;
  const t = constructText(c, "title");
  return t === "" ? null : t;
}

/** An entry's fullest content as HTML, or null. */
export function recordedContent(constructs: Constructs | undefined): string | null {
  if (!constructs) return null;
  for (const kind of CONTENT_ORDER) {
    const c = constructs[kind];
    if (!c) continue;
    const html = constructHtml(c, kind);
    if (html !== "") return html;
  }
  return null;
}
