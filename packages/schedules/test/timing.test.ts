import { Cron } from "croner";
import { describe, expect, it } from "vitest";
import { buildSchedule, nextRunAfter, ScheduleValidationError, validateTiming } from "../src/index.js";

const at = (iso: string) => new Date(iso);

describe("nextRunAfter: cron with a timezone (croner 11)", () => {
  it("0 9 * * * in America/New_York is 14:00Z in EST and 13:00Z in EDT, across the 2026-03-08 change", () => {
    const schedule = { cron: "0 9 * * *", timezone: "America/New_York" };
    expect(nextRunAfter(schedule, at("2026-03-06T15:00:00Z"))).toEqual(at("2026-03-07T14:00:00.000Z"));
    expect(nextRunAfter(schedule, at("2026-03-07T14:00:00Z"))).toEqual(at("2026-03-08T13:00:00.000Z"));
    expect(nextRunAfter(schedule, at("2026-03-08T13:00:00Z"))).toEqual(at("2026-03-09T13:00:00.000Z"));
    // Cross-checked against croner used directly, as the design asks.
    const direct = new Cron("0 9 * * *", { timezone: "America/New_York", paused: true });
    expect(direct.nextRun(at("2026-03-06T15:00:00Z"))).toEqual(at("2026-03-07T14:00:00.000Z"));
  });

  it("is strictly after `from`, to the millisecond", () => {
    const schedule = { cron: "0 9 * * *", timezone: "America/New_York" };
    expect(nextRunAfter(schedule, at("2026-03-07T13:59:59.999Z"))).toEqual(at("2026-03-07T14:00:00.000Z"));
    expect(nextRunAfter(schedule, at("2026-03-07T14:00:00.000Z"))).toEqual(at("2026-03-08T13:00:00.000Z"));
  });

  it("pins croner's DST rules: spring-forward gap fires after the gap, fall-back repeat fires once, wildcard hour fires in both", () => {
    // 02:30 does not exist on 2026-03-08 in New York: fires at 03:00 EDT (07:00Z) that day.
    expect(nextRunAfter({ cron: "30 2 * * *", timezone: "America/New_York" }, at("2026-03-08T05:00:00Z"))).toEqual(at("2026-03-08T07:00:00.000Z"));
    // 01:30 happens twice on 2026-11-01: only the first (EDT, 05:30Z); the next is the day after.
    const repeated = { cron: "30 1 * * *", timezone: "America/New_York" };
    expect(nextRunAfter(repeated, at("2026-11-01T04:00:00Z"))).toEqual(at("2026-11-01T05:30:00.000Z"));
    expect(nextRunAfter(repeated, at("2026-11-01T05:30:00Z"))).toEqual(at("2026-11-02T06:30:00.000Z"));
    // "30 * * * *" fires at 01:30 EDT and again at 01:30 EST.
    const hourly = { cron: "30 * * * *", timezone: "America/New_York" };
    expect(nextRunAfter(hourly, at("2026-11-01T05:30:00Z"))).toEqual(at("2026-11-01T06:30:00.000Z"));
  });

  it("reads a cron without a timezone in UTC", () => {
    expect(nextRunAfter({ cron: "15 10 * * *" }, at("2026-03-01T10:15:00Z"))).toEqual(at("2026-03-02T10:15:00.000Z"));
  });
});

describe("nextRunAfter: intervals", () => {
  it("without a current slot, from + interval", () => {
    expect(nextRunAfter({ interval: "5m" }, at("2026-03-01T10:00:00.123Z"))).toEqual(at("2026-03-01T10:05:00.123Z"));
  });

  it("after downtime: one slot after now on the schedule's grid, no backlog", () => {
    const schedule = { interval: "5m", nextRunAt: at("2026-03-01T10:00:00.000Z") };
    expect(nextRunAfter(schedule, at("2026-03-01T12:03:10.000Z"))).toEqual(at("2026-03-01T12:05:00.000Z"));
  });

  it("a late tick does not shift later fires: 100 ms late still gives the next grid slot", () => {
    const schedule = { interval: "1h", nextRunAt: at("2026-03-01T10:00:00.000Z") };
    expect(nextRunAfter(schedule, at("2026-03-01T10:00:00.100Z"))).toEqual(at("2026-03-01T11:00:00.000Z"));
    expect(nextRunAfter(schedule, at("2026-03-01T10:00:00.000Z"))).toEqual(at("2026-03-01T11:00:00.000Z"));
  });

  it("a day is 24 h, also across a DST change (use cron for wall-clock days)", () => {
    expect(nextRunAfter({ interval: "1d" }, at("2026-03-07T14:00:00Z"))).toEqual(at("2026-03-08T14:00:00.000Z"));
  });
});

describe("validateTiming", () => {
  it.each([
    [{}, /exactly one of interval and cron/],
    [{ interval: "5m", cron: "* * * * *" }, /exactly one of interval and cron/],
    [{ interval: "5m", timezone: "UTC" }, /only applies to cron/],
    [{ cron: "0 0 9 * * *" }, /expected 5 fields/],
    [{ cron: "@daily" }, /expected 5 fields/],
    [{ cron: "61 * * * *" }, /invalid cron "61 \* \* \* \*"/],
    [{ cron: "0 0 30 2 *" }, /never fires/],
    [{ cron: "0 9 * * *", timezone: "America/Nowhere" }, /invalid timezone "America\/Nowhere"/],
    [{ interval: "fast" }, /invalid interval "fast"/],
  ])("refuses %j", (timing, message) => {
    expect(() => validateTiming(timing)).toThrow(ScheduleValidationError);
    expect(() => validateTiming(timing)).toThrow(message);
  });

  it("nextRunAfter refuses an invalid `from`", () => {
    expect(() => nextRunAfter({ interval: "5m" }, new Date(Number.NaN))).toThrow(ScheduleValidationError);
  });
});

describe("buildSchedule", () => {
  it("fills id, enabled, nextRunAt and timestamps from `now`", () => {
    const now = at("2026-03-06T15:00:00.000Z");
    const s = buildSchedule({ kind: "applet", target: "a1", cron: "0 9 * * *", timezone: "America/New_York", input: { x: 1 } }, { now, generateId: () => "id-1" });
    expect(s).toEqual({
      id: "id-1",
      kind: "applet",
      target: "a1",
      cron: "0 9 * * *",
      timezone: "America/New_York",
      input: { x: 1 },
      enabled: true,
      nextRunAt: at("2026-03-07T14:00:00.000Z"),
      createdAt: now,
      updatedAt: now,
    });
  });

  it("refuses a bad init with every store's validation error", () => {
    expect(() => buildSchedule({ kind: "applet", target: "a1", interval: "soon" }, { now: new Date(), generateId: () => "x" })).toThrow(ScheduleValidationError);
  });
});
