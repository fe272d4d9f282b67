import { describe, expect, test } from "vitest";
import { decide } from "@/lib/executor/conditions";
import { journalKey, stepIdOf } from "@/lib/executor/types";
import { idempotencyKey } from "@/lib/executor/walk";

describe("decide (step conditions through the automations library)", () => {
  const ctx = { trigger: { body: { amount: 120, tier: "basic", tags: ["a"] } }, item: { qty: 0 } };

  test("a flat group is the library's verdict and words", () => {
    expect(decide({ all: [{ field: "trigger.body.amount", op: "gt", value: 100 }] }, ctx)).toEqual({ holds: true, why: "trigger.body.amount 120 > 100" });
    expect(decide({ any: [{ field: "trigger.body.tier", op: "eq", value: "vip" }] }, ctx)).toEqual({ holds: false, why: `trigger.body.tier "basic" ≠ "vip"` });
  });

  test("nested groups: the entry that settles the group says why", () => {
    const nested = { all: [{ field: "trigger.body.amount", op: "gte", value: 100 }, { any: [{ field: "trigger.body.tier", op: "eq", value: "vip" }, { field: "item.qty", op: "eq", value: 0 }] }] };
    expect(decide(nested, ctx)).toEqual({ holds: true, why: "trigger.body.amount 120 ≥ 100 and (item.qty 0 = 0)" });
    const fails = { any: [{ field: "trigger.body.missing", op: "exists" }, { all: [{ field: "trigger.body.amount", op: "lt", value: 10 }] }] };
    expect(decide(fails, ctx)).toEqual({ holds: false, why: "trigger.body.missing is missing and (trigger.body.amount 120 ≥ 10)" });
  });
});

describe("journal keys and idempotency keys", () => {
  test("rows stored before step lists get the ids version 1's step list gives the same steps", () => {
    expect(stepIdOf({ kind: "filter" })).toBe("filter");
    expect(stepIdOf({ kind: "transform" })).toBe("ai");
    expect(stepIdOf({ kind: "action", index: 2 })).toBe("action_3");
    expect(journalKey({ kind: "action", index: 0 })).toBe("action_1");
    expect(journalKey({ id: "send", kind: "action", iteration: [1, 0] })).toBe("send[1.0]");
  });

  const run = { id: "run-1", eventId: "evt-1", replay: false, plannedRunId: null };
  test("a top-level action of version 1's shape keeps <event>:<index>; other steps name their id and iteration", () => {
    expect(idempotencyKey(run, "action_2", [], 1)).toBe("evt-1:1");
    expect(idempotencyKey(run, "send", [])).toBe("evt-1:send");
    expect(idempotencyKey(run, "send", [2])).toBe("evt-1:send[2]");
    expect(idempotencyKey(run, "line", [1, 0])).toBe("evt-1:line[1.0]");
  });

  test("a replay adds its run id; a timed run keys by its planned run", () => {
    expect(idempotencyKey({ ...run, replay: true }, "action_1", [], 0)).toBe("evt-1:0:run-1");
    expect(idempotencyKey({ ...run, replay: true }, "send", [3])).toBe("evt-1:send[3]:run-1");
    expect(idempotencyKey({ ...run, plannedRunId: "run-1" }, "action_1", [], 0)).toBe("run-1");
    expect(idempotencyKey({ ...run, id: "run-2", plannedRunId: "run-1" }, "action_1", [], 0)).toBe("run-1:run-2");
  });
});
