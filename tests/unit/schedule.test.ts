import { describe, expect, test } from "vitest";
import { ManualClock } from "@/lib/core/clock";
import { loadConfig } from "@/lib/core/config";
import { silentLogger } from "@/lib/core/log";
import { emptyTriggerState } from "@/lib/triggers/types";
import { nextFireTimes, scheduleConfigSchema, schedulePayload, scheduleTrigger } from "@/lib/triggers/schedule";
import { nextRunOf } from "@/lib/triggers";
import type { PollContext } from "@/lib/triggers/types";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * Expected instants are written as local wall time with the zone's offset at that moment (checked
 * against the tz database with Intl), never computed with croner, so these tests pin croner's
 * behaviour instead of repeating it.
 */
const at = (iso: string) => new Date(iso).toISOString();
const fires = (cron: string, tz: string, from: string, n: number) => nextFireTimes(cron, tz, new Date(from), n).map((d) => d.toISOString());

describe("schedule: fire times", () => {
  // The spec's acceptance list has the two instants swapped ("13:00 and 14:00 UTC"). 09:00 in New
  // York is 14:00Z under EST (UTC−5, until 2026-03-08 02:00) and 13:00Z under EDT (UTC−4). The
  // true instants are asserted here.
  test("AC3: 0 9 * * * in America/New_York fires at 09:00 local: 14:00 UTC on 2026-03-07 (EST) and 13:00 UTC on 2026-03-09 (EDT)", () => {
    expect(fires("0 9 * * *", "America/New_York", "2026-03-06T15:00:00Z", 3)).toEqual([
      at("2026-03-07T09:00:00-05:00"),
      at("2026-03-08T09:00:00-04:00"),
      at("2026-03-09T09:00:00-04:00"),
    ]);
    expect(at("2026-03-07T09:00:00-05:00")).toBe("2026-03-07T14:00:00.000Z");
    expect(at("2026-03-09T09:00:00-04:00")).toBe("2026-03-09T13:00:00.000Z");
  });

  test("AC3: the next fire is strictly after `from` (a fire time itself is not returned again)", () => {
    expect(fires("0 9 * * *", "America/New_York", "2026-03-09T13:00:00.000Z", 1)).toEqual([at("2026-03-10T09:00:00-04:00")]);
  });
});

describe("schedule: croner 11 DST rule (DESIGN.md), pinned", () => {
  describe("spring forward: a time in the gap fires at the first valid time after the gap, the same day", () => {
    test("AC3: America/New_York 02:30 on 2026-03-08 fires at 03:00 EDT, then 02:30 EDT the next day", () => {
      expect(fires("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2)).toEqual([at("2026-03-08T03:00:00-04:00"), at("2026-03-09T02:30:00-04:00")]);
    });
    test("AC3: America/New_York 0 2 * * * (the spec's example) fires at 03:00 EDT on 2026-03-08, not skipped", () => {
      expect(fires("0 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2)).toEqual([at("2026-03-08T03:00:00-04:00"), at("2026-03-09T02:00:00-04:00")]);
    });
    test("AC3: Europe/Berlin 02:30 on 2026-03-29 fires at 03:00 CEST", () => {
      expect(fires("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2)).toEqual([at("2026-03-29T03:00:00+02:00"), at("2026-03-30T02:30:00+02:00")]);
    });
    test("AC3: Australia/Lord_Howe (30-minute shift) 02:15 on 2026-10-04 fires at 02:30 +11:00", () => {
      expect(fires("15 2 * * *", "Australia/Lord_Howe", "2026-10-02T12:00:00Z", 3)).toEqual([
        at("2026-10-03T02:15:00+10:30"),
        at("2026-10-04T02:30:00+11:00"),
        at("2026-10-05T02:15:00+11:00"),
      ]);
    });
    test("AC3: America/Santiago (transition at midnight) 0 0 * * * on 2026-09-06 fires at 01:00 -03:00, the same date", () => {
      const times = fires("0 0 * * *", "America/Santiago", "2026-09-04T12:00:00Z", 3);
      expect(times).toEqual([at("2026-09-05T00:00:00-04:00"), at("2026-09-06T01:00:00-03:00"), at("2026-09-07T00:00:00-03:00")]);
      expect(schedulePayload(new Date(times[1]!), "America/Santiago")).toMatchObject({ date: "2026-09-06", time: "01:00", weekday: "Sunday" });
    });
  });

  describe("fall back: a repeated time fires once, at its first occurrence", () => {
    test("AC3: America/New_York 01:30 on 2026-11-01 fires at 01:30 EDT only", () => {
      expect(fires("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2)).toEqual([at("2026-11-01T01:30:00-04:00"), at("2026-11-02T01:30:00-05:00")]);
    });
    test("AC3: Europe/Berlin 02:30 on 2026-10-25 fires at 02:30 CEST only", () => {
      expect(fires("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2)).toEqual([at("2026-10-25T02:30:00+02:00"), at("2026-10-26T02:30:00+01:00")]);
    });
    test("AC3: Australia/Lord_Howe 01:45 on 2026-04-05 fires at 01:45 +11:00 only", () => {
      expect(fires("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", 2)).toEqual([at("2026-04-05T01:45:00+11:00"), at("2026-04-06T01:45:00+10:30")]);
    });
    test("AC3: America/Santiago 23:30 on 2026-04-04 fires at 23:30 -03:00 only", () => {
      expect(fires("30 23 * * *", "America/Santiago", "2026-04-04T12:00:00Z", 2)).toEqual([at("2026-04-04T23:30:00-03:00"), at("2026-04-05T23:30:00-04:00")]);
    });
  });

  describe("fall back: a wildcard hour fires in both repeated hours", () => {
    test("AC3: America/New_York 30 * * * * fires at 01:30 EDT and 01:30 EST on 2026-11-01", () => {
      expect(fires("30 * * * *", "America/New_York", "2026-11-01T04:00:00Z", 4)).toEqual([
        at("2026-11-01T00:30:00-04:00"),
        at("2026-11-01T01:30:00-04:00"),
        at("2026-11-01T01:30:00-05:00"),
        at("2026-11-01T02:30:00-05:00"),
      ]);
    });
    test("AC3: Europe/Berlin 30 * * * * fires at 02:30 CEST and 02:30 CET on 2026-10-25", () => {
      expect(fires("30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 2)).toEqual([at("2026-10-25T02:30:00+02:00"), at("2026-10-25T02:30:00+01:00")]);
    });
    test("AC3: Australia/Lord_Howe 45 * * * * fires at 01:45 +11:00 and 01:45 +10:30 on 2026-04-05", () => {
      expect(fires("45 * * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z", 3)).toEqual([
        at("2026-04-05T01:45:00+11:00"),
        at("2026-04-05T01:45:00+10:30"),
        at("2026-04-05T02:45:00+10:30"),
      ]);
    });
    test("AC3: America/Santiago 30 * * * * fires at 23:30 -03:00 and 23:30 -04:00 on 2026-04-04", () => {
      expect(fires("30 * * * *", "America/Santiago", "2026-04-05T02:00:00Z", 3)).toEqual([
        at("2026-04-04T23:30:00-03:00"),
        at("2026-04-04T23:30:00-04:00"),
        at("2026-04-05T00:30:00-04:00"),
      ]);
    });
  });
});

describe("schedule: config", () => {
  test("AC3: a 5-field cron and an IANA zone are accepted", () => {
    expect(scheduleConfigSchema.parse({ cron: "0 9 * * 1-5", timezone: "Europe/Berlin" })).toEqual({ cron: "0 9 * * 1-5", timezone: "Europe/Berlin" });
  });
  test.each([
    ["6 fields (seconds)", { cron: "0 0 9 * * *", timezone: "UTC" }, /expected 5/],
    ["1 field", { cron: "daily", timezone: "UTC" }, /expected 5/],
    ["an out-of-range minute", { cron: "61 9 * * *", timezone: "UTC" }, /invalid cron/],
    ["no timezone", { cron: "0 9 * * *" }, /timezone/],
    ["an unknown zone", { cron: "0 9 * * *", timezone: "Mars/Olympus_Mons" }, /unknown IANA time zone/],
    ["an unknown key", { cron: "0 9 * * *", timezone: "UTC", every: "day" }, /every/],
  ])("AC3: refused: %s", (_name, config, message) => {
    const r = scheduleConfigSchema.safeParse(config);
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toMatch(message);
  });
});

describe("cron errors: one message that names the field, quotes the token and gives the range", () => {
  const problem = (cron: string) => {
    const r = scheduleConfigSchema.safeParse({ cron, timezone: "UTC" });
    return r.success ? null : r.error.issues.map((i) => i.message).join(" | ");
  };

  test.each([
    ["* * 32 * *", 'schedule: invalid cron "* * 32 * *": day-of-month "32" is out of range; day-of-month is 1–31'],
    ["0 0 1 13 *", 'schedule: invalid cron "0 0 1 13 *": month "13" is out of range; month is 1–12 or JAN–DEC'],
    ["0 */0 * * *", 'schedule: invalid cron "0 */0 * * *": hour "*/0" has step 0; a step is at least 1 (hour is 0–23)'],
    ["* * 0 * *", 'schedule: invalid cron "* * 0 * *": day-of-month "0" is out of range; day-of-month is 1–31'],
    ["1-70 * * * *", 'schedule: invalid cron "1-70 * * * *": minute "70" (in "1-70") is out of range; minute is 0–59'],
    ["0 9 * * 8", 'schedule: invalid cron "0 9 * * 8": day-of-week "8" is out of range; day-of-week is 0–7 (0 and 7 are Sunday) or SUN–SAT'],
    ["0 0 * JAN-FOO *", 'schedule: invalid cron "0 0 * JAN-FOO *": month "FOO" (in "JAN-FOO") is not a valid value; month is 1–12 or JAN–DEC'],
  ])("%s gets exactly one clear message in the user's numbers", (cron, message) => {
    expect(problem(cron)).toBe(message);
    // Said once: croner's zero-based "Invalid value for day: 31" and the doubled prefix are gone.
    expect(problem(cron)!.match(/invalid cron/g)).toHaveLength(1);
  });

  test("the nicknames @hourly, @daily, @weekly, @monthly and @yearly are accepted and fire like their expressions, DST rule included", () => {
    const same: [string, string][] = [["@hourly", "0 * * * *"], ["@daily", "0 0 * * *"], ["@weekly", "0 0 * * 0"], ["@monthly", "0 0 1 * *"], ["@yearly", "0 0 1 1 *"], ["@annually", "0 0 1 1 *"]];
    for (const [nickname, expression] of same) {
      expect(problem(nickname)).toBeNull();
      // Across the fall-back night in New York: @hourly is a wildcard hour, so it fires in both 01:00s.
      expect(fires(nickname, "America/New_York", "2026-10-31T12:00:00Z", 4)).toEqual(fires(expression, "America/New_York", "2026-10-31T12:00:00Z", 4));
    }
    expect(fires("@hourly", "America/New_York", "2026-11-01T04:30:00Z", 3)).toEqual([at("2026-11-01T01:00:00-04:00"), at("2026-11-01T01:00:00-05:00"), at("2026-11-01T02:00:00-05:00")]);
    expect(problem("@reboot")).toMatch(/@reboot is not a time; use a schedule such as "0 \* \* \* \*"/);
  });
});

describe("schedule: croner's extensions are accepted with croner's meaning", () => {
  const problem = (cron: string) => {
    const r = scheduleConfigSchema.safeParse({ cron, timezone: "UTC" });
    return r.success ? null : r.error.issues.map((i) => i.message).join(" | ");
  };

  test.each(["0 9 * * FRI#L", "0 9 * * 5#L", "0 9 * * MON#2", "0 9 * * FRIL", "0 12 13 * +FRI", "0 9 ? * ?", "? 9 * * *", "0 9 * ? *", "0 9 * * MON-SUN", "0 9 * * SAT-SUN#L"])(
    "%s is a valid schedule",
    (cron) => expect(problem(cron)).toBeNull(),
  );

  test("the last Friday, the second Monday, Friday the 13th and Monday to Sunday fire when croner says", () => {
    expect(fires("0 9 * * FRI#L", "Europe/Berlin", "2026-01-01T00:00:00Z", 2)).toEqual([at("2026-01-30T09:00:00+01:00"), at("2026-02-27T09:00:00+01:00")]);
    expect(fires("0 9 * * FRIL", "Europe/Berlin", "2026-01-01T00:00:00Z", 2)).toEqual(fires("0 9 * * 5#L", "Europe/Berlin", "2026-01-01T00:00:00Z", 2));
    expect(fires("0 9 * * MON#2", "America/New_York", "2026-01-01T00:00:00Z", 2)).toEqual([at("2026-01-12T09:00:00-05:00"), at("2026-02-09T09:00:00-05:00")]);
    expect(fires("0 12 13 * +FRI", "UTC", "2026-01-01T00:00:00Z", 2)).toEqual([at("2026-02-13T12:00:00Z"), at("2026-03-13T12:00:00Z")]);
    expect(fires("0 9 * * MON-SUN", "UTC", "2026-01-01T00:00:00Z", 7)).toEqual(fires("0 9 * * *", "UTC", "2026-01-01T00:00:00Z", 7));
  });

  test("what croner would read as something nobody wrote is refused with the reason", () => {
    expect(problem("0 9 5L * *")).toMatch(/L stands alone in day-of-month \(the last day of the month\); for a day and the last day write "5,L"/);
    expect(problem("0 9 * * MON#")).toMatch(/# goes between a weekday and which one it is/);
  });
});

describe("schedule: poll", () => {
  const ctx = (): PollContext => ({
    http: () => Promise.reject(new Error("a schedule never fetches")),
    clock: new ManualClock("2026-03-09T13:00:07.000Z"),
    log: silentLogger,
    config: loadConfig({ DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "whenthen-schedule-")) }),
    render: async (t) => t,
    redact: (v) => v,
  });

  test("AC3: one event keyed by the slot, with every ingredient formatted in the applet's zone", async () => {
    const slot = new Date("2026-03-09T13:00:00.000Z");
    const r = await scheduleTrigger.poll({ cron: "0 9 * * *", timezone: "America/New_York" }, emptyTriggerState(), ctx(), slot);
    expect(r.events).toEqual([
      {
        dedupeKey: "2026-03-09T13:00:00.000Z",
        payload: {
          fired_at: "2026-03-09T13:00:00.000Z",
          fired_at_local: "2026-03-09T09:00:00-04:00",
          date: "2026-03-09",
          time: "09:00",
          weekday: "Monday",
          timezone: "America/New_York",
          late_by_seconds: 7,
        },
      },
    ]);
    expect(r.state).toMatchObject({ lastPolledAt: "2026-03-09T13:00:07.000Z", lastError: null, errorCount: 0 });
  });

  test("AC3: the local date can differ from the UTC date (Lord Howe is ahead of UTC)", () => {
    expect(schedulePayload(new Date("2026-04-04T14:45:00.000Z"), "Australia/Lord_Howe")).toMatchObject({
      fired_at_local: "2026-04-05T01:45:00+11:00",
      date: "2026-04-05",
      time: "01:45",
      weekday: "Sunday",
    });
  });

  test("AC3: nextRunAt is the next fire time after `from`", () => {
    const next = nextRunOf(scheduleTrigger, { cron: "0 9 * * *", timezone: "America/New_York" }, new Date("2026-03-07T14:00:00.000Z"), emptyTriggerState());
    expect(next.toISOString()).toBe("2026-03-08T13:00:00.000Z");
  });
});
