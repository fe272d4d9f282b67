import { describe, expect, it } from "vitest";
import {
  CONDITION_OPS,
  evaluateCondition,
  evaluateConditions,
  explainCondition,
  explainConditions,
  MISSING,
  parseConditions,
  parseRule,
  patternProblem,
  PATTERN_MAX_LENGTH,
  resolvePath,
  showValue,
} from "../src/index";
import type { Condition, ConditionOp } from "../src/types";

/**
 * The condition evaluator as a table: every operator against a field of every kind, and a missing
 * one. Each kind is a field of the payload below; each cell lists (value, expected) pairs.
 */
const payload = {
  number: 120,
  numeric: "120",
  string: "Paid in Full",
  zoned: "2026-03-01T10:00:00+01:00", // 09:00 UTC
  plain: "2026-03-01T10:00:00", // no zone
  boolean: true,
  list: ["vip", "new", 7],
  object: { a: 1 },
  null: null,
  // missing: not there
};
const KINDS = ["number", "numeric", "string", "zoned", "plain", "boolean", "list", "object", "null", "missing"] as const;
type Kind = (typeof KINDS)[number];
type Cells = Record<Kind, Array<[value: unknown, holds: boolean]>>;

const T = true;
const F = false;
const EXISTS_ROWS = (missing: boolean): Array<[unknown, boolean]> => [
  [undefined, !missing],
  [true, !missing],
  [false, missing],
];

const TABLE: Record<ConditionOp, Cells> = {
  eq: {
    number: [[120, T], [121, F], ["120", T], ["abc", F]],
    numeric: [[120, T], ["120", T], ["120.0", F], [100, F]],
    string: [["Paid in Full", T], ["paid in full", F], [0, F]],
    zoned: [["2026-03-01T09:00:00Z", T], ["2026-03-01T10:00:00Z", F], ["2026-03-01T10:00:00", F]],
    plain: [["2026-03-01T10:00:00", T], ["2026-03-01T10:00", T], ["2026-03-01T10:00:00Z", F]],
    boolean: [[true, T], [false, F], ["true", F], [1, F]],
    list: [[["vip", "new", 7], T], [["vip"], F]],
    object: [[{ a: 1 }, T], [{ a: 2 }, F]],
    null: [[null, T], [0, F], ["", F]],
    missing: [[null, F], ["x", F]],
  },
  ne: {
    number: [[120, F], [121, T], ["abc", T]],
    numeric: [[120, F], [100, T]],
    string: [["Paid in Full", F], ["x", T]],
    // A date with a zone against one without: not comparable, so not "different" either.
    zoned: [["2026-03-01T09:00:00Z", F], ["2026-03-01T10:00:00Z", T], ["2026-03-01T10:00:00", F]],
    plain: [["2026-03-01T10:00:00", F], ["2026-03-02", T], ["2026-03-01T10:00:00Z", F]],
    boolean: [[true, F], [false, T]],
    list: [[["vip", "new", 7], F], [[], T]],
    object: [[{ a: 1 }, F], [{}, T]],
    null: [[null, F], [1, T]],
    missing: [[1, T], [null, T]],
  },
  gt: {
    number: [[100, T], [120, F], ["100", T], ["abc", F]],
    // Both sides numeric text: compared as numbers ("120" > "99", which as text it is not).
    numeric: [[100, T], ["99", T], [200, F]],
    string: [["Paid", T], ["Zebra", F], [100, F]],
    zoned: [["2026-03-01T08:59:59Z", T], ["2026-03-01T09:00:00Z", F], ["2026-03-01T09:00:00", F], [Date.parse("2026-03-01T08:00:00Z"), T]],
    plain: [["2026-03-01", T], ["2026-03-01T10:00:01", F], ["2026-03-01T00:00:00Z", F]],
    boolean: [[0, F], ["a", F]],
    list: [[1, F]],
    object: [[0, F]],
    null: [[-1, F]],
    missing: [[0, F]],
  },
  gte: {
    number: [[120, T], [121, F]],
    numeric: [["120", T], [121, F]],
    string: [["Paid in Full", T], ["Zebra", F]],
    zoned: [["2026-03-01T09:00:00Z", T], ["2026-03-01T09:00:01Z", F]],
    plain: [["2026-03-01T10:00", T], ["2026-03-01T10:00:00+01:00", F]],
    boolean: [[1, F]],
    list: [[0, F]],
    object: [[0, F]],
    null: [[0, F]],
    missing: [[0, F]],
  },
  lt: {
    number: [[121, T], [120, F]],
    // As text "120" < "1000" is false; as numbers it holds.
    numeric: [["1000", T], [100, F]],
    string: [["Zebra", T], ["Paid", F]],
    zoned: [["2026-03-01T09:00:01Z", T], ["2026-03-01T09:00:00Z", F], [Date.parse("2026-03-01T10:00:00Z"), T]],
    plain: [["2026-03-02", T], ["2026-03-02T00:00:00Z", F]],
    boolean: [[2, F]],
    list: [[100, F]],
    object: [[100, F]],
    null: [[1, F]],
    missing: [[1, F]],
  },
  lte: {
    number: [[120, T], [119, F]],
    numeric: [["120", T], [119.5, F]],
    string: [["Paid in Full", T], ["A", F]],
    zoned: [["2026-03-01T09:00:00.000Z", T], ["2026-03-01T08:00:00Z", F]],
    plain: [["2026-03-01T10:00:00", T], ["2026-03-01T09:00:00", F]],
    boolean: [[1, F]],
    list: [[9, F]],
    object: [[9, F]],
    null: [[0, F]],
    missing: [[0, F]],
  },
  contains: {
    number: [["2", F], [120, F]],
    numeric: [["12", T], [12, T], ["3", F]],
    string: [["in", T], ["IN", F]],
    zoned: [["2026-03", T], ["Z", F]],
    plain: [["T10", T]],
    boolean: [[true, F]],
    list: [["vip", T], ["gold", F], [7, T], ["7", T]],
    object: [["a", F]],
    null: [[null, F]],
    missing: [["x", F]],
  },
  not_contains: {
    number: [["2", T]],
    numeric: [["12", F], ["3", T]],
    string: [["in", F], ["xyz", T]],
    zoned: [["2027", T], ["+01", F]],
    plain: [["T10", F]],
    boolean: [[true, T]],
    list: [["vip", F], ["gold", T]],
    object: [["a", T]],
    null: [["x", T]],
    missing: [["x", T]],
  },
  starts_with: {
    number: [["1", F]],
    numeric: [["12", T], ["2", F]],
    string: [["Paid", T], ["paid", F]],
    zoned: [["2026-", T]],
    plain: [["2026-03-01T", T], ["T", F]],
    boolean: [["t", F]],
    list: [["vip", F]],
    object: [["{", F]],
    null: [["n", F]],
    missing: [["", F]],
  },
  ends_with: {
    number: [["0", F]],
    numeric: [["20", T], ["2", F]],
    string: [["Full", T], ["full", F]],
    zoned: [["+01:00", T], ["Z", F]],
    plain: [[":00", T]],
    boolean: [["e", F]],
    list: [["new", F]],
    object: [["}", F]],
    null: [["l", F]],
    missing: [["", F]],
  },
  matches: {
    number: [["^1", F]],
    numeric: [["^\\d+$", T], ["^\\d{4}$", F]],
    string: [["^Paid\\b", T], ["full$", F], ["(a+)+$", F]],
    zoned: [["[+-]\\d{2}:\\d{2}$", T]],
    plain: [["[+-]\\d{2}:\\d{2}$|Z$", F]],
    boolean: [["true", F]],
    list: [["vip", F]],
    object: [["a", F]],
    null: [["null", F]],
    missing: [[".*", F]],
  },
  in: {
    number: [[[100, 120], T], [["120"], T], [[1], F]],
    numeric: [[[120], T], [["120"], T], [["12"], F]],
    string: [[["Paid in Full", "Open"], T], [["paid in full"], F]],
    zoned: [[["2026-03-01T09:00:00Z"], T], [["2026-03-01T10:00:00"], F]],
    plain: [[["2026-03-01T10:00:00"], T], [["2026-03-01T09:00:00Z"], F]],
    boolean: [[[true], T], [[false], F]],
    // A list field is in the list when any of its elements is.
    list: [[["gold", "vip"], T], [["gold"], F]],
    object: [[[{ a: 1 }], T], [[{ a: 2 }], F]],
    null: [[[null], T], [[0], F]],
    missing: [[[null], F]],
  },
  not_in: {
    number: [[[1], T], [[120], F]],
    numeric: [[["12"], T], [["120"], F]],
    string: [[["Open"], T], [["Paid in Full"], F]],
    // Not comparable (a zone against none) is false, as for ne.
    zoned: [[["2026-03-01T10:00:00Z"], T], [["2026-03-01T09:00:00Z"], F], [["2026-03-01T10:00:00"], F]],
    plain: [[["2026-03-02T10:00:00"], T], [["2026-03-01T10:00:00"], F]],
    boolean: [[[false], T], [[true], F]],
    list: [[["gold"], T], [["new"], F]],
    object: [[[{ a: 2 }], T], [[{ a: 1 }], F]],
    null: [[[0], T], [[null], F]],
    missing: [[[null], T]],
  },
  exists: {
    number: EXISTS_ROWS(false),
    numeric: EXISTS_ROWS(false),
    string: EXISTS_ROWS(false),
    zoned: EXISTS_ROWS(false),
    plain: EXISTS_ROWS(false),
    boolean: EXISTS_ROWS(false),
    list: EXISTS_ROWS(false),
    object: EXISTS_ROWS(false),
    null: EXISTS_ROWS(false),
    missing: EXISTS_ROWS(true),
  },
  is_empty: {
    number: [[undefined, F], [false, T]],
    numeric: [[undefined, F]],
    string: [[undefined, F]],
    zoned: [[undefined, F]],
    plain: [[undefined, F]],
    boolean: [[undefined, F]],
    list: [[undefined, F], [false, T]],
    object: [[undefined, F]],
    null: [[undefined, T], [true, T], [false, F]],
    missing: [[undefined, T], [false, F]],
  },
};

const rows = (Object.entries(TABLE) as [ConditionOp, Cells][]).flatMap(([op, cells]) =>
  KINDS.flatMap((kind) => cells[kind].map(([value, holds]) => ({ op, kind, value, holds }))),
);
const conditionOf = ({ op, kind, value }: { op: ConditionOp; kind: Kind; value: unknown }): Condition => ({
  field: `payload.${kind}`,
  op,
  ...(value !== undefined ? { value } : {}),
});
const scope = { payload, contact: {}, event: {} };

describe("the condition evaluator, operator by kind of field", () => {
  it("covers every operator against every kind of field, missing included", () => {
    expect(Object.keys(TABLE).sort()).toEqual([...CONDITION_OPS].sort());
    for (const op of CONDITION_OPS) for (const kind of KINDS) expect(TABLE[op][kind].length, `${op} × ${kind}`).toBeGreaterThan(0);
  });

  it.each(rows)("$op on a $kind field, value $value → $holds", (row) => {
    const condition = conditionOf(row);
    const verdict = explainCondition(condition, scope);
    expect(verdict.holds).toBe(row.holds);
    // One evaluator: the boolean entry points answer what the explanation says.
    expect(evaluateCondition(condition, scope)).toBe(row.holds);
    expect(evaluateConditions({ all: [condition] }, scope)).toBe(row.holds);
    expect(explainConditions({ all: [condition] }, scope).holds).toBe(row.holds);
    expect(verdict.why).toMatch(/^payload\./);
  });

  it("empty: missing, null, empty text, an empty list and an empty object are empty; 0 and false are not", () => {
    const s = { v: { text: "", list: [], object: {}, zero: 0, no: false, space: " " } };
    const empty = (field: string) => evaluateCondition({ field, op: "is_empty" }, s);
    expect(["v.text", "v.list", "v.object", "v.nope"].map(empty)).toEqual([true, true, true, true]);
    expect(["v.zero", "v.no", "v.space"].map(empty)).toEqual([false, false, false]);
  });

  it("ignore_case lower-cases both sides of every text comparison, and makes matches case-insensitive", () => {
    const holds = (op: ConditionOp, value: unknown, field = "payload.string") => evaluateCondition({ field, op, value, ignore_case: true }, scope);
    expect(holds("eq", "paid in full")).toBe(true);
    expect(holds("ne", "PAID IN FULL")).toBe(false);
    expect(holds("contains", "IN")).toBe(true);
    expect(holds("not_contains", "FULL")).toBe(false);
    expect(holds("starts_with", "paid")).toBe(true);
    expect(holds("ends_with", "FULL")).toBe(true);
    expect(holds("matches", "^paid\\b")).toBe(true);
    expect(holds("in", ["PAID IN FULL"])).toBe(true);
    expect(holds("not_in", ["PAID IN FULL"])).toBe(false);
    expect(holds("gte", "paid in full")).toBe(true);
    expect(holds("contains", "VIP", "payload.list")).toBe(true);
    expect(holds("in", ["NEW"], "payload.list")).toBe(true);
    // Without it, case counts.
    expect(evaluateCondition({ field: "payload.string", op: "eq", value: "paid in full" }, scope)).toBe(false);
    expect(evaluateCondition({ field: "payload.string", op: "matches", value: "^paid" }, scope)).toBe(false);
  });

  it("dates: any offset is the same instant, fractions and zones as ISO 8601 writes them, impossible dates are text", () => {
    const at = (value: unknown, op: ConditionOp, other: unknown) => evaluateCondition({ field: "v", op, value: other }, { v: value });
    expect(at("2026-03-01T10:00:00+01:00", "eq", "2026-03-01T04:00:00-05:00")).toBe(true);
    expect(at("2026-03-01T10:00:00+0100", "eq", "2026-03-01T09:00Z")).toBe(true);
    expect(at("2026-03-01T10:00:00.5Z", "gt", "2026-03-01T10:00:00Z")).toBe(true);
    expect(at(new Date("2026-03-01T09:00:00Z"), "eq", "2026-03-01T10:00:00+01:00")).toBe(true);
    expect(at("2026-12-31T23:00:00-02:00", "gt", "2027-01-01T00:00:00Z")).toBe(true);
    // Not a date (no 30 February): compared as text.
    expect(at("2026-02-30T10:00:00Z", "lt", "2026-03-01T00:00:00Z")).toBe(true);
    expect(at("2026-02-30T10:00:00Z", "lt", "2026-02-30T10:00:00+05:00")).toBe(false);
  });

  it("does not read inherited properties, a text's length or through null as fields", () => {
    expect(evaluateCondition({ field: "payload.constructor", op: "exists" }, scope)).toBe(false);
    expect(evaluateCondition({ field: "payload.string.length", op: "exists" }, scope)).toBe(false);
    expect(evaluateCondition({ field: "payload.null.x", op: "exists" }, scope)).toBe(false);
  });
});

describe("resolvePath", () => {
  const obj = { a: { b: [{ c: 1 }, { c: null }], u: undefined, s: "text" } };
  it.each([
    ["a.b.0.c", 1],
    ["a.b.1.c", null],
    ["a.b.2.c", MISSING],
    ["a.u", MISSING],
    ["a.s.length", MISSING],
    ["a.toString", MISSING],
    // A list's length is its own property, so "items.length" counts the items.
    ["a.b.length", 2],
    ["x", MISSING],
  ] as const)("%s → %s", (path, expected) => {
    expect(resolvePath(obj, path)).toBe(expected);
  });
  it("takes the path as a list of keys too", () => {
    expect(resolvePath(obj, ["a", "b", "0", "c"])).toBe(1);
    expect(resolvePath({ "a.b": 2 }, ["a.b"])).toBe(2);
  });
});

describe("why, for the run log", () => {
  const s = {
    amount: 120,
    country: "DE",
    status: "paid",
    tags: ["vip", "new"],
    due: "2026-03-01T10:00:00Z",
    local: "2026-03-01T10:00:00",
    ref: "INV-2026",
    note: "x".repeat(500),
  };
  const why = (c: Condition) => explainCondition(c, s).why;

  it("one condition says what it found and how it compares", () => {
    expect(why({ field: "amount", op: "gt", value: 100 })).toBe("amount 120 > 100");
    expect(why({ field: "amount", op: "gt", value: 200 })).toBe("amount 120 ≤ 200");
    expect(why({ field: "amount", op: "lte", value: 100 })).toBe("amount 120 > 100");
    expect(why({ field: "country", op: "eq", value: "DE" })).toBe('country "DE" = "DE"');
    expect(why({ field: "country", op: "eq", value: "FR" })).toBe('country "DE" ≠ "FR"');
    expect(why({ field: "status", op: "in", value: ["open"] })).toBe('status "paid" is not one of ["open"]');
    expect(why({ field: "status", op: "not_in", value: ["open", "void"] })).toBe('status "paid" is not one of ["open","void"]');
    expect(why({ field: "tags", op: "in", value: ["vip"] })).toBe('tags ["vip","new"] has one of ["vip"]');
    expect(why({ field: "tags", op: "not_in", value: ["gold"] })).toBe('tags ["vip","new"] has none of ["gold"]');
    expect(why({ field: "country", op: "eq", value: "de", ignore_case: true })).toBe('country "DE" = "de" (ignoring case)');
    expect(why({ field: "ref", op: "matches", value: "^inv-\\d+$", ignore_case: true })).toBe('ref "INV-2026" matches /^inv-\\d+$/i');
    expect(why({ field: "ref", op: "starts_with", value: "CN-" })).toBe('ref "INV-2026" does not start with "CN-"');
    expect(why({ field: "amount", op: "contains", value: "2" })).toBe("amount 120 is a number, not text or a list");
  });

  it("a missing field, an empty one and exists", () => {
    expect(why({ field: "total", op: "gt", value: 100 })).toBe("total is missing");
    expect(why({ field: "total", op: "ne", value: 100 })).toBe("total is missing");
    expect(why({ field: "total", op: "exists" })).toBe("total is missing");
    expect(why({ field: "amount", op: "exists" })).toBe("amount exists");
    expect(why({ field: "tags", op: "is_empty" })).toBe('tags ["vip","new"] is not empty');
  });

  it("what cannot be compared says so, and is false", () => {
    expect(explainCondition({ field: "due", op: "gt", value: "2026-03-01T09:00:00" }, s)).toEqual({
      holds: false,
      why: 'due "2026-03-01T10:00:00Z" and "2026-03-01T09:00:00" cannot be compared: one date has a time zone and the other does not',
    });
    expect(explainCondition({ field: "local", op: "ne", value: "2026-03-01T10:00:00Z" }, s).holds).toBe(false);
    expect(why({ field: "country", op: "gt", value: 5 })).toBe('country "DE" and 5 cannot be compared: text cannot be compared with a number');
    expect(why({ field: "due", op: "not_in", value: ["2026-03-01T10:00:00"] })).toBe(
      'due "2026-03-01T10:00:00Z" and "2026-03-01T10:00:00" cannot be compared: one date has a time zone and the other does not',
    );
  });

  it("a long value is cut short", () => {
    const text = why({ field: "note", op: "eq", value: "y" });
    expect(text.length).toBeLessThan(120);
    expect(text).toContain("…");
    expect(showValue(Array.from({ length: 100_000 }, (_, i) => i))).toHaveLength(80);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(showValue(circular)).toContain("{…}");
  });

  it("all and any name the deciding conditions", () => {
    const big: Condition = { field: "amount", op: "gt", value: 100 };
    const de: Condition = { field: "country", op: "eq", value: "DE" };
    const fr: Condition = { field: "country", op: "eq", value: "FR" };
    const open: Condition = { field: "status", op: "in", value: ["open"] };
    expect(explainConditions({ all: [big, de] }, s)).toEqual({ holds: true, why: 'amount 120 > 100 and country "DE" = "DE"' });
    expect(explainConditions({ all: [big, fr, open] }, s)).toEqual({ holds: false, why: 'country "DE" ≠ "FR"' });
    expect(explainConditions({ any: [fr, de, big] }, s)).toEqual({ holds: true, why: 'country "DE" = "DE"' });
    expect(explainConditions({ all: [big], any: [fr, de] }, s)).toEqual({ holds: true, why: 'amount 120 > 100 and country "DE" = "DE"' });
    expect(explainConditions({ all: [big], any: [fr, open] }, s)).toEqual({ holds: false, why: 'country "DE" ≠ "FR" and status "paid" is not one of ["open"]' });
    expect(explainConditions(undefined, s)).toEqual({ holds: true, why: "no conditions" });
    expect(explainConditions({ all: [], any: [] }, s)).toEqual({ holds: true, why: "no conditions" });
  });

  it("a pattern that was never checked fails at run time with the reason, not with a throw", () => {
    expect(explainCondition({ field: "ref", op: "matches", value: "(a)\\1" }, s)).toEqual({
      holds: false,
      why: 'ref: pattern "(a)\\\\1": backreferences (\\1, \\k<name>) are not supported: patterns are RE2, which matches in linear time',
    });
  });
});

describe("patterns: linear time, and what RE2 cannot do is refused", () => {
  const evil = `${"a".repeat(100_000)}!`;

  it.each(["(a+)+$", "^(a|aa)*$", "(a|a)*b", "(.*a){20}$", "^(\\w+\\s?)*$"])("%s on 100,000 characters and a \"!\" finishes in linear time", (pattern) => {
    expect(patternProblem(pattern)).toBeNull();
    const started = performance.now();
    expect(evaluateCondition({ field: "v", op: "matches", value: pattern }, { v: evil })).toBe(false);
    // A backtracking engine takes longer than the age of the universe here; RE2 takes milliseconds.
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("eight times the text takes about eight times as long, not sixty-four", () => {
    // The fastest of several runs, after a warm-up, so that JIT and GC pauses do not count.
    const time = (n: number) => {
      const v = `${"a".repeat(n)}!`;
      let best = Infinity;
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        evaluateCondition({ field: "v", op: "matches", value: "(a+)+$" }, { v });
        best = Math.min(best, performance.now() - started);
      }
      return best;
    };
    time(100_000);
    const small = time(100_000);
    const large = time(800_000);
    // Linear is ~8x, quadratic ~64x; the margin is for a shared machine.
    expect(large / Math.max(small, 0.5)).toBeLessThan(24);
  });

  it.each<[string, RegExp]>([
    ["(a)\\1", /^backreferences \(\\1, \\k<name>\) are not supported/],
    ["(?<n>a)\\k<n>", /^backreferences/],
    ["foo(?=bar)", /^lookahead and lookbehind .* are not supported/],
    ["foo(?!bar)", /^lookahead and lookbehind/],
    ["(?<=\\$)\\d+", /^lookahead and lookbehind/],
    ["(?<!x)y", /^lookahead and lookbehind/],
    ["[", /^not a valid pattern: missing closing \]/],
    ["abc)", /^not a valid pattern: unexpected \)/],
    ["*a", /^not a valid pattern: missing argument to repetition operator/],
    ["a{1001}", /^not a valid pattern: invalid repeat count/],
    ["(a{1000}){1000}", /^not a valid pattern: invalid repeat count/],
    ["a".repeat(PATTERN_MAX_LENGTH + 1), /^a pattern is at most 1,000 characters; this one has 1,001$/],
  ])("refuses %s", (pattern, message) => {
    expect(patternProblem(pattern)).toMatch(message);
  });

  it("accepts RE2 syntax and refuses what is not text", () => {
    for (const p of ["^INV-\\d+$", "(?i)abc", "\\p{L}+", "\\bfoo\\b", "(?P<year>\\d{4})", "a{1000}", "a".repeat(PATTERN_MAX_LENGTH)]) expect(patternProblem(p), p).toBeNull();
    expect(patternProblem(42)).toBe("a pattern is text");
  });
});

describe("parseRule and parseConditions read the new operators", () => {
  const rule = (conditions: unknown) => ({ id: "r", trigger: { events: ["order.paid"] }, conditions, steps: [{ action: "email.send" }] });
  const problems = (conditions: unknown) => {
    const parsed = parseRule(rule(conditions));
    return parsed.ok ? [] : parsed.problems.map((p) => [p.path, p.code, p.message]);
  };

  it("accepts every operator, ignore_case, and keeps ignore_case on the rule", () => {
    const all = [
      { field: "payload.ref", op: "matches", value: "^INV-\\d+$", ignore_case: true },
      { field: "payload.ref", op: "starts_with", value: "INV" },
      { field: "payload.ref", op: "ends_with", value: "6" },
      { field: "payload.ref", op: "not_contains", value: "X", ignore_case: false },
      { field: "payload.items", op: "is_empty", value: false },
      { field: "payload.note", op: "is_empty" },
    ];
    const parsed = parseRule(rule({ all }));
    expect(parsed.ok && parsed.rule.conditions).toEqual({ all });
    expect(parsed.ok && evaluateConditions(parsed.rule.conditions, { payload: { ref: "INV-2026", items: [1] }, contact: {}, event: {} })).toBe(true);
  });

  it("refuses a bad pattern, a bad ignore_case and values an operator cannot take, each at its path", () => {
    expect(
      problems({
        all: [
          { field: "payload.ref", op: "matches", value: "(\\d)\\1" },
          { field: "payload.ref", op: "matches", value: "[" },
          { field: "payload.ref", op: "matches", value: 5 },
          { field: "payload.ref", op: "eq", value: "x", ignore_case: "yes" },
          { field: "payload.ref", op: "exists", ignore_case: true },
          { field: "payload.ref", op: "starts_with", value: 1 },
          { field: "payload.ref", op: "is_empty", value: "no" },
        ],
        any: [{ field: "payload.ref", op: "ends_with" }],
      }),
    ).toEqual([
      ["conditions.all.0.value", "invalid_pattern", "backreferences (\\1, \\k<name>) are not supported: patterns are RE2, which matches in linear time"],
      ["conditions.all.1.value", "invalid_pattern", "not a valid pattern: missing closing ]: `[`"],
      ["conditions.all.2.value", "invalid_pattern", "a pattern is text"],
      ["conditions.all.3.ignore_case", "invalid_value", "ignore_case is true or false"],
      ["conditions.all.4.ignore_case", "invalid_value", "ignore_case applies to comparisons of text; exists compares nothing"],
      ["conditions.all.5.value", "invalid_value", "starts_with takes text"],
      ["conditions.all.6.value", "invalid_value", "is_empty takes true or false"],
      ["conditions.any.0.value", "required", "ends_with needs a value"],
    ]);
  });

  it("parseConditions reads conditions on their own, under the caller's path and roots", () => {
    expect(parseConditions({ all: [{ field: "trigger.body.ref", op: "matches", value: "(?=x)" }] }, { path: "steps.2.if", roots: null }).problems.map((p) => [p.path, p.code])).toEqual([["steps.2.if.all.0.value", "invalid_pattern"]]);
    expect(parseConditions({ any: [{ field: "steps.lookup.output.found", op: "eq", value: true }] }, { path: "steps.0.if", roots: ["trigger", "steps"] })).toEqual({
      conditions: { any: [{ field: "steps.lookup.output.found", op: "eq", value: true }] },
      problems: [],
    });
    expect(parseConditions({ all: [{ field: "payload.x", op: "eq", value: 1 }] }, { roots: ["trigger"] }).problems).toEqual([
      { path: "conditions.all.0.field", code: "invalid_path", message: 'field must be a path starting with trigger.; got "payload.x"' },
    ]);
    expect(parseConditions(undefined)).toEqual({ problems: [] });
  });
});
