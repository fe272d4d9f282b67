import { describe, expect, test } from "vitest";
import type { Step } from "@/lib/executor/types";
import { journalTree, loopSummary, stepTitle } from "@/lib/ui/run-journal";

const entry = (over: Partial<Step>): Step => ({ kind: "action", name: "http", status: "succeeded", attempt: 1, warnings: [], logs: [], started_at: "2026-03-01T10:00:00.000Z", duration_ms: 1, ...over });

describe("the run page's journal tree", () => {
  test("old rows (no ids, no places) stay a flat list, titled as before", () => {
    const tree = journalTree([entry({ kind: "filter", name: "filter" }), entry({ index: 0 }), entry({ index: 1, name: "slack" })]);
    expect(tree.map((n) => [n.id, n.position, stepTitle(n.entry)])).toEqual([
      ["filter", 1, "Filter code"],
      ["action_1", 2, "Action 1: http"],
      ["action_2", 3, "Action 2: slack"],
    ]);
  });

  test("an if shows the branch taken with its steps and the other greyed with the reason", () => {
    const tree = journalTree([
      entry({ id: "big", kind: "if", name: "if", decision: "then", why: "trigger.body.amount 120 > 100 → then" }),
      entry({ id: "slack", place: "big:then" }),
      entry({ id: "after" }),
    ]);
    expect(tree.map((n) => n.id)).toEqual(["big", "after"]);
    expect(tree[0]!.branches!.map((b) => [b.name, b.taken, b.why, b.children.map((c) => c.id)])).toEqual([
      ["then", true, "trigger.body.amount 120 > 100 → then", ["slack"]],
      ["else", false, "not taken: trigger.body.amount 120 > 100 → then", []],
    ]);
  });

  test("paths: every checked path with its words; a for_each inside a path groups its items, a failed item counted", () => {
    const tree = journalTree([
      entry({ id: "route", kind: "paths", name: "paths", decision: "orders", output: { mode: "first", taken: ["orders"], checked: [{ name: "refunds", holds: false, why: `kind "order" ≠ "refund"` }, { name: "orders", holds: true, why: `kind "order" = "order"` }] } }),
      entry({ id: "lines", kind: "for_each", name: "for_each", place: "route:orders", output: { items: 3, succeeded: 2, failed: 1, skipped: 0, not_run: 0 } }),
      entry({ id: "row", iteration: [0], place: "route:orders/lines" }),
      entry({ id: "row", iteration: [1], place: "route:orders/lines", status: "failed", continued: true }),
      entry({ id: "row", iteration: [2], place: "route:orders/lines" }),
    ]);
    const [route] = tree;
    expect(route!.branches!.map((b) => [b.name, b.taken])).toEqual([
      ["refunds", false],
      ["orders", true],
    ]);
    const loop = route!.branches![1]!.children[0]!;
    expect(loop.loop!.items.map((i) => [i.index, i.status])).toEqual([
      [0, "succeeded"],
      [1, "failed"],
      [2, "succeeded"],
    ]);
    expect(loop.loop!.summary).toBe("3 items: 2 succeeded, 1 failed");
  });

  test("a loop's summary names what did not run", () => {
    expect(loopSummary({ items: 100, succeeded: 97, failed: 3, skipped: 0, not_run: 0 }, null)).toBe("100 items: 97 succeeded, 3 failed");
    expect(loopSummary({ items: 1200, succeeded: 1000, failed: 0, skipped: 0, not_run: 200 }, null)).toBe("1,200 items: 1,000 succeeded, 200 not run (past max_items)");
    expect(loopSummary({ items: 3, succeeded: 1, failed: 1, skipped: 0, not_run: 0 }, 2)).toBe("3 items: 1 succeeded, 1 failed, stopped at item 1");
  });
});
