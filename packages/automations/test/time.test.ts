import { describe, expect, it } from "vitest";
import { instantToZonedWall, planRuns, readInstant, zonedWallToInstant, zoneOffsetMs } from "../src/index";
import type { Rule } from "../src/types";
import { HOUR, iso } from "./fixtures";

// The nights of 2026 on which each zone's clocks change. `skipped` is a wall time inside the gap
// and where it lands (moved forward by the gap); `repeated` is a wall time shown twice and its
// first occurrence.
const nights = [
  { zone: "America/New_York", skipped: { wall: "2026-03-08T02:30", at: "2026-03-08T07:30:00Z" }, repeated: { wall: "2026-11-01T01:30", at: "2026-11-01T05:30:00Z" } },
  { zone: "Europe/Berlin", skipped: { wall: "2026-03-29T02:30", at: "2026-03-29T01:30:00Z" }, repeated: { wall: "2026-10-25T02:30", at: "2026-10-25T00:30:00Z" } },
  { zone: "Australia/Sydney", skipped: { wall: "2026-10-04T02:30", at: "2026-10-03T16:30:00Z" }, repeated: { wall: "2026-04-05T02:30", at: "2026-04-04T15:30:00Z" } },
  // Half-hour shift: 02:00 becomes 02:30 in October, 02:00 becomes 01:30 in April.
  { zone: "Australia/Lord_Howe", skipped: { wall: "2026-10-04T02:15", at: "2026-10-03T15:45:00Z" }, repeated: { wall: "2026-04-05T01:45", at: "2026-04-04T14:45:00Z" } },
  // +12:45 / +13:45, changing at 02:45 standard time.
  { zone: "Pacific/Chatham", skipped: { wall: "2026-09-27T03:00", at: "2026-09-26T14:15:00Z" }, repeated: { wall: "2026-04-05T03:15", at: "2026-04-04T13:30:00Z" } },
];

function wall(text: string) {
  const [date, time] = text.split("T") as [string, string];
  const [year, month, day] = date.split("-").map(Number) as [number, number, number];
  const [hour, minute] = time.split(":").map(Number) as [number, number];
  return { year, month, day, hour, minute };
}

describe("zonedWallToInstant", () => {
  it.each(nights)("$zone: a skipped wall time moves forward by the gap, a repeated one is its first occurrence", ({ zone, skipped, repeated }) => {
    expect(new Date(zonedWallToInstant(wall(skipped.wall), zone)).toISOString()).toBe(new Date(skipped.at).toISOString());
    expect(new Date(zonedWallToInstant(wall(repeated.wall), zone)).toISOString()).toBe(new Date(repeated.at).toISOString());
  });

  it.each(["America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kolkata", "UTC"])("%s: an ordinary wall time round-trips", (zone) => {
    const at = iso("2026-06-15T09:41:00Z");
    const w = instantToZonedWall(at, zone);
    expect(zonedWallToInstant(w, zone)).toBe(at);
  });

  it("America/Mexico_City has had no DST since 2022: -06:00 all of 2026, -05:00 in the summer of 2021", () => {
    expect(zoneOffsetMs(iso("2026-01-15T12:00:00Z"), "America/Mexico_City")).toBe(-6 * HOUR);
    expect(zoneOffsetMs(iso("2026-07-15T12:00:00Z"), "America/Mexico_City")).toBe(-6 * HOUR);
    expect(zoneOffsetMs(iso("2021-07-15T12:00:00Z"), "America/Mexico_City")).toBe(-5 * HOUR);
    // The first Sunday of April 2026, when the old rule would have skipped 02:00-03:00.
    expect(zonedWallToInstant(wall("2026-04-05T02:30"), "America/Mexico_City")).toBe(iso("2026-04-05T08:30:00Z"));
  });
});

describe("quiet hours on the night the clocks change", () => {
  const rule = (zone: string, end: string): Rule => ({
    id: "r",
    enabled: true,
    trigger: { events: ["e"] },
    steps: [{ id: "s", action: "a", anchor: "at", lateness: null }],
    quietHours: { start: "22:00", end },
    timezone: zone,
  });
  const event = (at: number) => ({ id: "e1", type: "e", occurredAt: at, subject: { type: "t", id: "1", version: 0 }, payload: { at } });

  it.each(nights)("$zone: a window ending at a skipped time ends after the gap; at a repeated time, at its first occurrence", ({ zone, skipped, repeated }) => {
    for (const { wall: endWall, at } of [skipped, repeated]) {
      const endTime = endWall.slice(11);
      const endAt = iso(at);
      // Due at 23:00 local the evening before, inside the window.
      const { year, month, day } = wall(endWall);
      const dayBefore = new Date(Date.UTC(year, month - 1, day - 1));
      const due = zonedWallToInstant({ year: dayBefore.getUTCFullYear(), month: dayBefore.getUTCMonth() + 1, day: dayBefore.getUTCDate(), hour: 23, minute: 0 }, zone);
      const [run] = planRuns(rule(zone, endTime), event(due), due - HOUR);
      expect(run).toMatchObject({ status: "pending", dueAt: endAt });
    }
  });

  it("America/Mexico_City: the window ends at 08:00 -06:00 on the old DST night", () => {
    const due = iso("2026-04-05T05:00:00Z"); // 23:00 on the 4th, local
    const [run] = planRuns({ ...rule("America/Mexico_City", "08:00") }, event(due), due - HOUR);
    expect(run!.dueAt).toBe(iso("2026-04-05T14:00:00Z"));
  });

  it("a due time after a repeated window end, in the second pass of the hour, is outside the window", () => {
    // 01:20 EST (second pass) on 2026-11-01 in New York; the window 22:00-01:30 ended at 01:30 EDT.
    const due = iso("2026-11-01T06:20:00Z");
    const [run] = planRuns(rule("America/New_York", "01:30"), event(due), due - HOUR);
    expect(run!.dueAt).toBe(due);
  });
});

describe("cached zone offsets", () => {
  // Ground truth straight from Intl, independent of the cache.
  const formats = new Map<string, Intl.DateTimeFormat>();
  const truth = (instant: number, zone: string) => {
    if (!formats.has(zone)) formats.set(zone, new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" }));
    const parts = formats.get(zone)!.formatToParts(instant);
    const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
    return Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second")) - Math.floor(instant / 1000) * 1000;
  };

  it.each(nights.map((n) => n.zone).concat(["America/Mexico_City", "America/Santiago", "Africa/Casablanca"]))("%s: agree with Intl every 13 minutes through 2026 and to the second around each change", (zone) => {
    const start = iso("2026-01-01T00:00:00Z");
    const end = iso("2027-01-01T00:00:00Z");
    let previous = truth(start, zone);
    for (let t = start; t < end; t += 13 * 60_000) {
      const expected = truth(t, zone);
      expect(zoneOffsetMs(t, zone)).toBe(expected);
      if (expected !== previous) {
        for (let s = t - 13 * 60_000; s <= t; s += 1000) expect(zoneOffsetMs(s, zone)).toBe(truth(s, zone));
        previous = expected;
      }
    }
  });
});

describe("readInstant", () => {
  it("reads epoch ms and ISO text with a zone; refuses text without one", () => {
    expect(readInstant(1_700_000_000_000)).toBe(1_700_000_000_000);
    expect(readInstant("2026-10-12T10:00:00-06:00")).toBe(iso("2026-10-12T16:00:00Z"));
    expect(readInstant("2026-10-12T10:00:00.250Z")).toBe(iso("2026-10-12T10:00:00.250Z"));
    expect(readInstant("2026-10-12T10:00+0530")).toBe(iso("2026-10-12T04:30:00Z"));
    expect(readInstant("2026-10-12T10:00:00")).toBeNull();
    expect(readInstant("2026-10-12")).toBeNull();
    expect(readInstant("2026-02-31T10:00:00Z")).toBeNull();
    expect(readInstant("tomorrow")).toBeNull();
    expect(readInstant(Number.NaN)).toBeNull();
  });
});
