import { readdirSync, readFileSync } from "node:fs";
import iconv from "iconv-lite";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { registerEbcdic } from "@/lib/feeds/ebcdic";
import { FeedFormatError } from "@/lib/feeds/read";
import { feedItems, parseFeed } from "@/lib/triggers/rss";
import { translate, type Expectation } from "../helpers/feedparser-expect";

/**
 * feedparser's (Python, the Universal Feed Parser) own test feeds through whenthen's real parsing
 * code: fixtures/feedparser (credited in its README). Each file carries its expectation in a header
 * comment (`Expect:`, a Python expression over feedparser's result); expectations.json is those
 * lines translated to whenthen's fields by `translate` below, and a test checks that it still says
 * what the files say. Goals: ≥ 98 % of the well-formed expectations, ≥ 90 % of the encoding ones,
 * and no crash (an error that is not a FeedFormatError) on any file.
 */

registerEbcdic();
const root = path.resolve(__dirname, "../../fixtures/feedparser");
const FEED_URL = "http://example.com/feed.xml";

const expectations = JSON.parse(readFileSync(path.join(root, "expectations.json"), "utf8")) as { about: string; files: Record<string, Expectation> };
const feedFiles = readdirSync(root, { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".xml"))
  .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
  .sort();

/** The file's Expect line and text; an encoding test's file is read in the code page its name gives (some are EBCDIC). */
function expectLine(file: string): { line: string; text: string } | null {
  const bytes = readFileSync(path.join(root, file));
  const label = /^encoding\/x80_(.+)\.xml$/.exec(file)?.[1];
  const text = label && iconv.encodingExists(label) ? iconv.decode(bytes, label) : bytes.toString("latin1");
  const line = /^\s*Expect:\s*(.*)$/m.exec(text)?.[1]?.trim();
  return line === undefined ? null : { line, text };
}

interface Outcome {
  file: string;
  group: string;
  passed: boolean;
  crashed: boolean;
  why?: string;
}

async function run(file: string, expectation: Expectation): Promise<Outcome> {
  const { group } = expectation;
  let feed;
  try {
    feed = await parseFeed(readFileSync(path.join(root, file)), { feedUrl: FEED_URL });
  } catch (err) {
    const crashed = !(err instanceof FeedFormatError);
    return { file, group, passed: false, crashed, why: `${crashed ? "crashed" : "refused"}: ${(err as Error).message}` };
  }
  if ("leftOut" in expectation) return { file, group, passed: true, crashed: false };
  const items = feedItems(feed, FEED_URL);
  for (const c of expectation.checks) {
    const item = c.entry === undefined ? undefined : items[c.entry];
    const got =
      // The feed_title ingredient: the feed's title, or "" when it has none (as feedItems gives it).
      c.field === "feed_title" ? (feed.title ?? "")
      : !item ? undefined
      : c.field === "key" ? item.key
      : c.field === "category" ? (item.payload.categories as string[])[c.index ?? 0]
      : item.payload[c.field];
    if (got !== c.value) return { file, group, passed: false, crashed: false, why: `${c.field}${c.entry !== undefined ? ` of entry ${c.entry}` : ""}: expected ${JSON.stringify(c.value)}, got ${JSON.stringify(got)}` };
  }
  return { file, group, passed: true, crashed: false };
}

describe("feedparser's test feeds", () => {
  test("every file has an entry in expectations.json and every entry a file, and each entry says what the file's Expect line says", () => {
    expect(Object.keys(expectations.files).sort()).toEqual(feedFiles);
    for (const [file, e] of Object.entries(expectations.files)) {
      const found = expectLine(file);
      expect(e.group, file).toBe(file.split("/")[0]);
      if (found === null) {
        expect(e, file).toMatchObject({ leftOut: expect.any(String) });
        continue;
      }
      const translated = translate(found.line, found.text);
      expect("checks" in e ? { checks: e.checks } : { leftOut: e.leftOut }, file).toEqual(translated);
    }
  });

  test("≥ 98 % of the well-formed expectations and ≥ 90 % of the encoding ones hold, and no file, ill-formed ones included, crashes the reader", async () => {
    const outcomes = await Promise.all(Object.entries(expectations.files).map(([file, e]) => run(file, e)));
    const rate = (group: string) => {
      const counted = outcomes.filter((o) => o.group === group && !("leftOut" in expectations.files[o.file]!));
      return { passed: counted.filter((o) => o.passed).length, of: counted.length, missed: counted.filter((o) => !o.passed).map((o) => `${o.file}: ${o.why}`) };
    };
    const wellformed = rate("wellformed");
    const encoding = rate("encoding");
    const crashes = outcomes.filter((o) => o.crashed).map((o) => `${o.file}: ${o.why}`);
    expect(crashes).toEqual([]);
    expect(outcomes.filter((o) => o.group === "illformed").length).toBeGreaterThan(0);
    expect(wellformed.of).toBeGreaterThan(0);
    expect(encoding.of).toBeGreaterThan(0);
    expect(wellformed.passed / wellformed.of, `well-formed ${wellformed.passed}/${wellformed.of}; missed:\n${wellformed.missed.join("\n")}`).toBeGreaterThanOrEqual(0.98);
    expect(encoding.passed / encoding.of, `encoding ${encoding.passed}/${encoding.of}; missed:\n${encoding.missed.join("\n")}`).toBeGreaterThanOrEqual(0.9);
  });
});
