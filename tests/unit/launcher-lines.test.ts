import { describe, expect, test } from "vitest";
import { exitCodeOf, howItEnded, linePrefixer, lineSplitter } from "@/lib/launcher/lines";

describe("launcher: lines and exit codes", () => {
  test("a prefix at the start of every line, once for a line written in parts, none after the last newline", () => {
    const p = linePrefixer("[web] ");
    expect(p("one\ntwo\n")).toBe("[web] one\n[web] two\n");
    expect(p("three ")).toBe("[web] three ");
    expect(p("continued\n\nfive")).toBe("continued\n[web] \n[web] five");
    expect(p("")).toBe("");
    expect(p("\n")).toBe("\n");
    expect(p("six\n")).toBe("[web] six\n");
  });

  test("a child's output comes out in whole lines; the unfinished last one at its end", () => {
    const s = lineSplitter();
    expect(s.push("wor")).toEqual([]);
    expect(s.push("ker up\nsec")).toEqual(["worker up\n"]);
    expect(s.push("ond\nthird\nfou")).toEqual(["second\n", "third\n"]);
    expect(s.end()).toEqual(["fou\n"]);
    expect(s.end()).toEqual([]);
  });

  test("exit codes as a shell reports them: the code, or 128 + the signal's number", () => {
    expect(exitCodeOf(0, null)).toBe(0);
    expect(exitCodeOf(3, null)).toBe(3);
    expect(exitCodeOf(null, "SIGKILL")).toBe(137);
    expect(exitCodeOf(null, "SIGTERM")).toBe(143);
    expect(exitCodeOf(null, null)).toBe(1);
    expect(howItEnded(null, "SIGKILL")).toBe("signal SIGKILL");
    expect(howItEnded(1, null)).toBe("exit code 1");
  });
});
