import { Cron } from "croner";
import { describe, expect, it } from "vitest";
import { buildSchedule, nextRunAfter, ScheduleValidationError, validateTiming } from "../src/index";

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

  it("spring forward, west of Greenwich: skipped times fire once at the first valid time after the gap, the same day", () => {
    const ny = (cron: string) => ({ cron, timezone: "America/New_York" });
    // 02:00–02:59 does not exist on 2026-03-08 in New York; the clock jumps to 03:00 EDT (07:00Z).
    expect(nextRunAfter(ny("30 2 * * *"), at("2026-03-08T05:00:00Z"))).toEqual(at("2026-03-08T07:00:00.000Z"));
    // Two skipped times fire once, at 03:00, and the next day is kept.
    expect(nextRunAfter(ny("0,30 2 * * *"), at("2026-03-08T05:00:00Z"))).toEqual(at("2026-03-08T07:00:00.000Z"));
    expect(nextRunAfter(ny("0,30 2 * * *"), at("2026-03-08T07:00:00Z"))).toEqual(at("2026-03-09T06:00:00.000Z"));
    expect(nextRunAfter(ny("*/20 2 * * *"), at("2026-03-08T05:00:00Z"))).toEqual(at("2026-03-08T07:00:00.000Z"));
    // A skipped hour among others: 03:00, then 14:00 EDT.
    expect(nextRunAfter(ny("0 2,14 * * *"), at("2026-03-08T05:00:00Z"))).toEqual(at("2026-03-08T07:00:00.000Z"));
    expect(nextRunAfter(ny("0 2,14 * * *"), at("2026-03-08T07:00:00Z"))).toEqual(at("2026-03-08T18:00:00.000Z"));
    // A time after the gap is not moved.
    expect(nextRunAfter(ny("30 3 * * *"), at("2026-03-08T05:00:00Z"))).toEqual(at("2026-03-08T07:30:00.000Z"));
  });

  it("fall back, west of Greenwich: a repeated time fires once, at its first occurrence", () => {
    const ny = (cron: string) => ({ cron, timezone: "America/New_York" });
    // 01:00–01:59 happens twice on 2026-11-01: EDT (05:xxZ), then EST (06:xxZ).
    const fires = (cron: string, from: string, n: number) => {
      const out: string[] = [];
      let t = at(from);
      for (let i = 0; i < n; i++) out.push((t = nextRunAfter(ny(cron), t)).toISOString());
      return out;
    };
    expect(fires("30 1 * * *", "2026-11-01T04:00:00Z", 2)).toEqual(["2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"]);
    expect(fires("0,30 1 * * *", "2026-11-01T04:00:00Z", 3)).toEqual(["2026-11-01T05:00:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-02T06:00:00.000Z"]);
    expect(fires("*/20 1 * * *", "2026-11-01T04:00:00Z", 4)).toEqual([
      "2026-11-01T05:00:00.000Z",
      "2026-11-01T05:20:00.000Z",
      "2026-11-01T05:40:00.000Z",
      "2026-11-02T06:00:00.000Z",
    ]);
    // Asked from inside the second 01:xx (a worker started at 01:10 EST): nothing more that day.
    expect(nextRunAfter(ny("0,30 1 * * *"), at("2026-11-01T06:10:00Z"))).toEqual(at("2026-11-02T06:00:00.000Z"));
  });

  it("a wildcard hour is elapsed time: it fires in both repeated hours and skips the missing one", () => {
    const hourly = { cron: "30 * * * *", timezone: "America/New_York" };
    expect(nextRunAfter(hourly, at("2026-11-01T05:30:00Z"))).toEqual(at("2026-11-01T06:30:00.000Z"));
    expect(nextRunAfter(hourly, at("2026-03-08T06:30:00Z"))).toEqual(at("2026-03-08T07:30:00.000Z"));
  });

  it("a ? hour is a wildcard hour too (croner reads ? as *): it fires in both repeated hours", () => {
    const question = { cron: "30 ? * * *", timezone: "America/New_York" };
    expect(nextRunAfter(question, at("2026-11-01T05:30:00Z"))).toEqual(at("2026-11-01T06:30:00.000Z"));
    expect(nextRunAfter(question, at("2026-03-08T06:30:00Z"))).toEqual(at("2026-03-08T07:30:00.000Z"));
  });

  it("east of Greenwich, both hemispheres: Berlin and Sydney", () => {
    const berlin = (cron: string) => ({ cron, timezone: "Europe/Berlin" });
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00Z.
    expect(nextRunAfter(berlin("0,30 2 * * *"), at("2026-03-29T00:00:00Z"))).toEqual(at("2026-03-29T01:00:00.000Z"));
    expect(nextRunAfter(berlin("0,30 2 * * *"), at("2026-03-29T01:00:00Z"))).toEqual(at("2026-03-30T00:00:00.000Z"));
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET at 01:00Z; 02:30 fires at its CEST occurrence.
    expect(nextRunAfter(berlin("30 2 * * *"), at("2026-10-25T00:00:00Z"))).toEqual(at("2026-10-25T00:30:00.000Z"));
    expect(nextRunAfter(berlin("30 2 * * *"), at("2026-10-25T00:30:00Z"))).toEqual(at("2026-10-26T01:30:00.000Z"));
    const sydney = (cron: string) => ({ cron, timezone: "Australia/Sydney" });
    // 2026-04-05: 03:00 AEDT falls back to 02:00 AEST at 2026-04-04T16:00Z.
    expect(nextRunAfter(sydney("30 2 * * *"), at("2026-04-04T14:00:00Z"))).toEqual(at("2026-04-04T15:30:00.000Z"));
    expect(nextRunAfter(sydney("30 2 * * *"), at("2026-04-04T15:30:00Z"))).toEqual(at("2026-04-05T16:30:00.000Z"));
    // 2026-10-04: 02:00 AEST jumps to 03:00 AEDT at 2026-10-03T16:00Z.
    expect(nextRunAfter(sydney("15 2 * * *"), at("2026-10-03T12:00:00Z"))).toEqual(at("2026-10-03T16:00:00.000Z"));
  });

  it("a zone with a 30-minute change (Lord Howe Island)", () => {
    // 2026-10-04: 02:00 +10:30 jumps to 02:30 +11 at 2026-10-03T15:30Z; 02:15 fires at 02:30.
    const lordHowe = { cron: "15 2 * * *", timezone: "Australia/Lord_Howe" };
    expect(nextRunAfter(lordHowe, at("2026-10-03T12:00:00Z"))).toEqual(at("2026-10-03T15:30:00.000Z"));
  });

  it("reads a cron without a timezone in UTC, whatever the host's zone", () => {
    const tz = process.env.TZ;
    process.env.TZ = "America/Los_Angeles";
    try {
      expect(nextRunAfter({ cron: "15 10 * * *" }, at("2026-03-01T10:15:00Z"))).toEqual(at("2026-03-02T10:15:00.000Z"));
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
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
    [{ cron: "@reboot" }, /@reboot is not a time/],
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
