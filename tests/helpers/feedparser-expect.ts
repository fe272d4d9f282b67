import { decodeHTML } from "entities";
import { parseDateText } from "@/lib/core/dates";

/**
 * feedparser's (Python) test files state their expectation as a Python expression (`Expect:`);
 * `translate` turns one into checks over whenthen's fields, for tests/unit/feedparser-corpus.test.ts
 * and for writing fixtures/feedparser/expectations.json.
 */

type Field = "feed_title" | "title" | "content" | "link" | "key" | "author" | "category" | "published_at";
export interface Check {
  field: Field;
  entry?: number;
  /** For categories: which one. */
  index?: number;
  value: string;
}
export type Expectation = { group: string; checks: Check[] } | { group: string; leftOut: string };

/** A Python string literal ('…', "…", u'…') → its text. */
export function pyString(literal: string): string | null {
  const m = /^u?(['"])((?:\\.|(?!\1).)*)\1$/s.exec(literal.trim());
  if (!m) return null;
  return m[2]!.replace(/\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)/g, (_, e: string) => {
    if (e[0] === "u" || e[0] === "x") return String.fromCharCode(parseInt(e.slice(1), 16));
    return { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"' }[e] ?? `\\${e}`;
  });
}

/** A Python time tuple `(2003, 12, 31, 10, 14, 55, 2, 365, 0)` → ISO UTC. */
export function pyTimeTuple(literal: string): string | null {
  const m = /^\(\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)/.exec(literal.trim());
  if (!m) return null;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s)).toISOString();
}

const ENTRY_FIELDS: [RegExp, Field][] = [
  [/^\['title'\]$|^\['title_detail'\]\['value'\]$/, "title"],
  [/^\['(description|summary)'\]$|^\['(summary_detail|content)'\](\[0\])?\['value'\]$/, "content"],
  [/^\['link'\]$/, "link"],
  [/^\['(id|guid)'\]$/, "key"],
  [/^\['author'\]$/, "author"],
];

/**
 * One `Expect:` line → checks over whenthen's fields, or why it is left out. Only what whenthen
 * exposes maps: the feed's title; an entry's title, content (feedparser's description, summary or
 * content), link, key (guid or id), author, categories and date.
 */
export function translate(expect: string, source = ""): { checks: Check[] } | { leftOut: string } {
  const checks: Check[] = [];
  if (/\sor\s/.test(expect.replace(/'[^']*'|"[^"]*"/g, "''"))) return { leftOut: "accepts either of two values (an `or`), which a check of one value cannot say" };
  for (const raw of expect.split(/\s+and\s+/)) {
    const clause = raw.trim();
    if (clause === "not bozo" || clause === "bozo") continue;
    const parts = clause.split(/\s*==\s*/);
    if (parts.length < 2) return { leftOut: `not an equality: ${clause}` };
    const expected = parts.at(-1)!;
    const value = pyString(expected) ?? pyTimeTuple(expected);
    if (value === null) return { leftOut: `expects a value that is not text or a time: ${expected}` };
    // `entries[0].link` is feedparser's attribute access for `entries[0]['link']`.
    for (const lhs of parts.slice(0, -1).map((l) => l.replace(/\.([a-z_]+)$/, "['$1']"))) {
      if (/^feed\['title'\]$|^feed\['title_detail'\]\['value'\]$/.test(lhs)) {
        checks.push({ field: "feed_title", value: titleMarkup(source, "feed") ? htmlText(value) : value });
        continue;
      }
      const m = /^entries\[(\d+)\](.*)$/.exec(lhs);
      if (!m) return { leftOut: `about ${lhs}, which whenthen does not expose` };
      const entry = Number(m[1]);
      const rest = m[2]!;
      const plain = ENTRY_FIELDS.find(([re]) => re.test(rest));
      if (plain && plain[1] === "content" && /summary|description/.test(rest) && entryHasContent(source)) {
        return { leftOut: "about the summary of an entry that also has a fuller content, which is what whenthen's one content field holds" };
      }
      if (plain) {
        const markupTitle = plain[1] === "title" && titleMarkup(source, "entry");
        checks.push({ field: plain[1], entry, value: markupTitle ? htmlText(value) : value });
        continue;
      }
      const tag = /^\['tags'\]\[(\d+)\]\['term'\]$/.exec(rest);
      if (tag || rest === "['category']") {
        checks.push({ field: "category", entry, index: tag ? Number(tag[1]) : 0, value });
        continue;
      }
      if (/^\['(published|updated|created)'\]$/.test(rest)) {
        const date = parseDateText(value);
        if (!date) return { leftOut: `a date text whenthen's reader refuses on purpose: ${value}` };
        checks.push({ field: "published_at", entry, value: date.toISOString() });
        continue;
      }
      if (/^\['(published|updated|created)_parsed'\]$/.test(rest)) {
        checks.push({ field: "published_at", entry, value });
        continue;
      }
      return { leftOut: `about entries${rest}, which whenthen does not expose` };
    }
  }
  const contents = new Set(checks.filter((c) => c.field === "content").map((c) => `${c.entry}:${c.value}`));
  if (contents.size > new Set(checks.filter((c) => c.field === "content").map((c) => c.entry)).size) {
    return { leftOut: "expects an item's description and its content to differ; whenthen has one content field (the fullest)" };
  }
  return checks.length ? { checks } : { leftOut: "checks only that the feed is well-formed" };
}

/**
 * whenthen's title is text (it goes into messages, subjects and JSON), where feedparser keeps an
 * HTML or XHTML title as markup (`<b>&amp;</b>`): such an expectation is checked as the text that
 * markup shows (`&`). Whether the title is markup is read from the file, as feedparser does: Atom's
 * type="html"/"xhtml" (1.0) or "text/html"/"application/xhtml+xml" and mode="xml" (0.3).
 */
function titleMarkup(source: string, level: "feed" | "entry"): boolean {
  const from = level === "entry" ? source.search(/<(entry|item)[\s>]/i) : source.search(/-->/);
  if (from === -1) return false;
  const tag = /<title(\s[^>]*)?>/i.exec(source.slice(from))?.[1] ?? "";
  return /\btype\s*=\s*["'](html|xhtml|text\/html|application\/xhtml\+xml)["']/i.test(tag) || /\bmode\s*=\s*["']xml["']/i.test(tag);
}

/** Whether the (first) entry has a content element beside its summary or description. */
function entryHasContent(source: string): boolean {
  const from = source.search(/<(entry|item)[\s>]/i);
  return from !== -1 && /<(content|content:encoded|fullitem|body)[\s>]/i.test(source.slice(from));
}

/** The text an HTML fragment shows: tags dropped, character references decoded, whitespace as written. */
export function htmlText(html: string): string {
  return decodeHTML(html.replace(/<[A-Za-z/!?](?:[^>"']|"[^"]*"|'[^']*')*>/g, "")).trim();
}

