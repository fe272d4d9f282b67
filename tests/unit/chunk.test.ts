import { describe, expect, test } from "vitest";
import { chunkMessage } from "@/lib/actions/chunk";

const line = (n: number, ch = "x") => ch.repeat(n);

describe("chunkMessage", () => {
  test("AC14: 4,500 characters of lines become three chunks of at most 2,000, split on line breaks, nothing lost", () => {
    // 45 lines of 99 characters + "\n" = 4,500 characters.
    const lines = Array.from({ length: 45 }, (_, i) => `${String(i).padStart(2, "0")}${line(97)}`);
    const text = lines.join("\n") + "\n";
    expect(text.length).toBe(4500);
    const chunks = chunkMessage(text);
    expect(chunks).toHaveLength(3);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(2000);
    // Every chunk holds whole lines, in order: each break between chunks is one consumed "\n".
    expect(chunks.join("\n")).toBe(text);
    expect(chunks.flatMap((c) => c.split("\n")).filter((l) => l !== "")).toEqual(lines);
    expect(chunks[0]!.split("\n")[0]).toBe(lines[0]);
  });

  test("short text is one chunk, unchanged", () => {
    expect(chunkMessage("hello\n\nworld")).toEqual(["hello\n\nworld"]);
  });

  test("packs lines greedily up to the limit", () => {
    expect(chunkMessage("aaa\nbbb\nccc", 7)).toEqual(["aaa\nbbb", "ccc"]);
    expect(chunkMessage("aaa\nbbb\nccc", 11)).toEqual(["aaa\nbbb\nccc"]);
  });

  test("a line longer than the limit is cut hard, without newlines inserted", () => {
    const chunks = chunkMessage(`${line(5000, "a")}\nend`);
    expect(chunks.map((c) => c.length)).toEqual([2000, 2000, 1004]);
    expect(chunks.join("")).toBe(`${line(5000, "a")}\nend`);
    expect(chunks[2]).toBe(`${line(1000, "a")}\nend`);
  });

  test("a hard cut never splits a surrogate pair", () => {
    const text = "a" + "😀".repeat(10); // 21 code units
    const chunks = chunkMessage(text, 4);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(4);
      expect(c).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    }
    expect(chunks.join("")).toBe(text);
  });

  test("CRLF becomes LF and whitespace-only chunks are dropped", () => {
    expect(chunkMessage("a\r\nb")).toEqual(["a\nb"]);
    expect(chunkMessage("")).toEqual([]);
    expect(chunkMessage(`${line(6)}\n   \n${line(6)}`, 6)).toEqual([line(6), line(6)]);
  });

  test("refuses a limit that cannot make progress", () => {
    expect(() => chunkMessage("abc", 1)).toThrow(RangeError);
  });
});
