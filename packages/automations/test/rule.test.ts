import { describe, expect, it } from "vitest";
import { parseRule } from "../src/index";
import type { RuleProblem } from "../src/types";

const good = {
  id: "booking-reminder-24h",
  trigger: { events: ["booking.created"] },
  steps: [{ action: "email.send", offset: "-24h", anchor: "startsAt" }],
};

function problems(input: unknown): RuleProblem[] {
  const result = parseRule(input);
  if (result.ok) throw new Error(`expected problems for ${JSON.stringify(input)}`);
  return result.problems;
}

describe("parseRule", () => {
  it("returns the rule off until enabled, with step ids defaulting to their position", () => {
    const result = parseRule({ ...good, steps: [...good.steps, { action: "sms.send", offset: 3_600_000, lateness: null }] });
    expect(result).toEqual({
      ok: true,
      rule: {
        id: "booking-reminder-24h",
        enabled: false,
        trigger: { events: ["booking.created"] },
        steps: [
          { id: "0", action: "email.send", offset: "-24h", anchor: "startsAt" },
          { id: "1", action: "sms.send", offset: 3_600_000, lateness: null },
        ],
      },
    });
  });

  it("accepts the full rule of the spec", () => {
    const result = parseRule({
      ...good,
      enabled: true,
      version: 1,
      conditions: { all: [{ field: "contact.tags", op: "not_in", value: ["do-not-message"] }], any: [{ field: "payload.kind", op: "exists" }] },
      steps: [{ id: "email", action: "email.send", offset: "-24h", anchor: "startsAt", params: { template: "t" }, lateness: "1h" }],
      quietHours: { start: "21:00", end: "08:00", timezone: "Europe/Berlin", mode: "skip" },
      frequencyCap: { max: 1, per: "1d" },
      timezone: "America/Mexico_City",
    });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.rule.enabled).toBe(true);
  });

  // Each case: a bad rule and the problems it must report (path and code), all of them at once.
  const cases: Array<[string, unknown, Array<[string, string]>]> = [
    ["not an object", "rule", [["", "invalid_type"]]],
    ["null", null, [["", "invalid_type"]]],
    ["an array", [good], [["", "invalid_type"]]],
    ["no id", { ...good, id: undefined }, [["id", "required"]]],
    ["an id with spaces", { ...good, id: "my rule" }, [["id", "invalid_id"]]],
    ["a numeric id", { ...good, id: 7 }, [["id", "invalid_id"]]],
    ["enabled as text", { ...good, enabled: "yes" }, [["enabled", "invalid_type"]]],
    ["a negative version", { ...good, version: -1 }, [["version", "invalid_value"]]],
    ["an unknown key (a typo)", { ...good, quiethours: {} }, [["quiethours", "unknown_key"]]],
    ["no trigger", { ...good, trigger: undefined }, [["trigger", "required"]]],
    ["a trigger that is text", { ...good, trigger: "booking.created" }, [["trigger", "invalid_type"]]],
    ["no trigger events", { ...good, trigger: { events: [] } }, [["trigger.events", "empty"]]],
    ["a bad event type", { ...good, trigger: { events: ["booking.created", ""] } }, [["trigger.events.1", "invalid_value"]]],
    ["no steps", { ...good, steps: undefined }, [["steps", "required"]]],
    ["empty steps", { ...good, steps: [] }, [["steps", "empty"]]],
    ["a step that is text", { ...good, steps: ["email.send"] }, [["steps.0", "invalid_type"]]],
    ["a step without action", { ...good, steps: [{ offset: "1h" }] }, [["steps.0.action", "required"]]],
    ["a bad offset", { ...good, steps: [{ action: "a", offset: "24 hours" }] }, [["steps.0.offset", "invalid_duration"]]],
    ["a bare numeric offset string", { ...good, steps: [{ action: "a", offset: "3600" }] }, [["steps.0.offset", "invalid_duration"]]],
    ["a fractional millisecond offset", { ...good, steps: [{ action: "a", offset: 1.5 }] }, [["steps.0.offset", "invalid_duration"]]],
    ["a negative lateness", { ...good, steps: [{ action: "a", lateness: "-1h" }] }, [["steps.0.lateness", "negative_duration"]]],
    ["a bad lateness", { ...good, steps: [{ action: "a", lateness: "soon" }] }, [["steps.0.lateness", "invalid_duration"]]],
    ["a bad anchor", { ...good, steps: [{ action: "a", anchor: "starts at" }] }, [["steps.0.anchor", "invalid_path"]]],
    ["params that are a list", { ...good, steps: [{ action: "a", params: [1] }] }, [["steps.0.params", "invalid_type"]]],
    ["duplicate step ids", { ...good, steps: [{ id: "x", action: "a" }, { id: "x", action: "b" }] }, [["steps.1.id", "duplicate"]]],
    ["a step id that collides with a position", { ...good, steps: [{ action: "a" }, { id: "0", action: "b" }] }, [["steps.1.id", "duplicate"]]],
    ["an unknown step key", { ...good, steps: [{ action: "a", delay: "1h" }] }, [["steps.0.delay", "unknown_key"]]],
    ["conditions as a list", { ...good, conditions: [] }, [["conditions", "invalid_type"]]],
    ["conditions.all not a list", { ...good, conditions: { all: {} } }, [["conditions.all", "invalid_type"]]],
    ["an unknown op", { ...good, conditions: { all: [{ field: "payload.x", op: "like", value: 1 }] } }, [["conditions.all.0.op", "unknown_op"]]],
    ["a field outside the roots", { ...good, conditions: { any: [{ field: "booking.x", op: "eq", value: 1 }] } }, [["conditions.any.0.field", "invalid_path"]]],
    ["a bare root as field", { ...good, conditions: { all: [{ field: "payload", op: "exists" }] } }, [["conditions.all.0.field", "invalid_path"]]],
    ["in without a list", { ...good, conditions: { all: [{ field: "payload.x", op: "in", value: "a" }] } }, [["conditions.all.0.value", "invalid_value"]]],
    ["eq without a value", { ...good, conditions: { all: [{ field: "payload.x", op: "eq" }] } }, [["conditions.all.0.value", "required"]]],
    ["exists with a non-boolean", { ...good, conditions: { all: [{ field: "payload.x", op: "exists", value: "yes" }] } }, [["conditions.all.0.value", "invalid_value"]]],
    ["gt against an object", { ...good, conditions: { all: [{ field: "payload.x", op: "gt", value: {} }] } }, [["conditions.all.0.value", "invalid_value"]]],
    ["a condition without op", { ...good, conditions: { all: [{ field: "payload.x" }] } }, [["conditions.all.0.op", "required"]]],
    ["quiet hours at 24:00", { ...good, quietHours: { start: "21:00", end: "24:00" } }, [["quietHours.end", "invalid_clock_time"]]],
    ["quiet hours in 12-hour form", { ...good, quietHours: { start: "9pm", end: "8:00" } }, [["quietHours.start", "invalid_clock_time"], ["quietHours.end", "invalid_clock_time"]]],
    ["quiet hours without an end", { ...good, quietHours: { start: "21:00" } }, [["quietHours.end", "required"]]],
    ["an empty quiet window", { ...good, quietHours: { start: "08:00", end: "08:00" } }, [["quietHours", "empty_window"]]],
    ["a quiet-hours zone that does not exist", { ...good, quietHours: { start: "21:00", end: "08:00", timezone: "Mars/Olympus" } }, [["quietHours.timezone", "invalid_timezone"]]],
    ["a bad quiet-hours mode", { ...good, quietHours: { start: "21:00", end: "08:00", mode: "drop" } }, [["quietHours.mode", "invalid_value"]]],
    ["a rule zone that does not exist", { ...good, timezone: "Mexico City" }, [["timezone", "invalid_timezone"]]],
    ["a cap of zero", { ...good, frequencyCap: { max: 0, per: "1d" } }, [["frequencyCap.max", "invalid_value"]]],
    ["a cap over no time", { ...good, frequencyCap: { max: 1, per: 0 } }, [["frequencyCap.per", "negative_duration"]]],
    ["a cap without per", { ...good, frequencyCap: { max: 1 } }, [["frequencyCap.per", "required"]]],
  ];

  it.each(cases)("reports %s with its path and code, without throwing", (_name, input, expected) => {
    const found = problems(input).map((p) => [p.path, p.code]);
    expect(found).toEqual(expected);
  });

  it("has more than 30 bad rules in its table", () => {
    expect(cases.length).toBeGreaterThan(30);
  });

  it("reports every problem of a rule at once, each with a path, a code and a message", () => {
    const found = problems({
      id: "bad id",
      enabled: 1,
      trigger: { events: [] },
      conditions: { all: [{ field: "x", op: "like" }] },
      steps: [{ offset: "1 day", lateness: -5 }, { id: "0", action: "a", anchor: "" }],
      quietHours: { start: "25:00", end: "08:00", timezone: "Nowhere/Land" },
      frequencyCap: { max: 1.5, per: "x" },
      timezone: "UTC+1",
      extra: true,
    });
    expect(found.map((p) => [p.path, p.code])).toEqual([
      ["extra", "unknown_key"],
      ["id", "invalid_id"],
      ["enabled", "invalid_type"],
      ["trigger.events", "empty"],
      ["conditions.all.0.field", "invalid_path"],
      ["conditions.all.0.op", "unknown_op"],
      ["steps.0.action", "required"],
      ["steps.0.offset", "invalid_duration"],
      ["steps.0.lateness", "negative_duration"],
      ["steps.1.anchor", "invalid_path"],
      ["steps.1.id", "duplicate"],
      ["quietHours.start", "invalid_clock_time"],
      ["quietHours.timezone", "invalid_timezone"],
      ["frequencyCap.max", "invalid_value"],
      ["frequencyCap.per", "invalid_duration"],
      ["timezone", "invalid_timezone"],
    ]);
    for (const p of found) expect(p.message.length).toBeGreaterThan(5);
  });

  it("never throws, whatever it is given", () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const weird: unknown[] = [undefined, 0, true, Symbol("x"), () => 1, new Date(), { steps: { length: 2 } }, { trigger: { events: [null] }, steps: [null] }, Object.create(null), { ...good, id: 10n, version: 2n }, { ...good, steps: [{ action: "a", offset: 10n, lateness: circular }] }, { ...good, timezone: circular, quietHours: { start: circular, end: 10n } }];
    for (const input of weird) expect(() => parseRule(input)).not.toThrow();
  });
});
