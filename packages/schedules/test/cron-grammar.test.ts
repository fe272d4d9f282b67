import { readFileSync } from "node:fs";
import { Cron } from "croner";
import { describe, expect, it } from "vitest";
import { nextRunAfter, validateTiming } from "../src/index";
import { wallOf } from "../src/zoned";

/**
 * The app reads cron as croner 11 does: every pattern of croner's own tests (fixtures/croner/) is
 * accepted by both or refused by both, and an accepted one fires at the same instants from a set
 * of fixed starts in zones east and west of Greenwich, apart from what the project's DST rule
 * changes on purpose (DESIGN.md, the cron row of the Decisions table).
 */

interface Fixture {
  sources: { file: string; commit: string; patterns: string[] }[];
}
const fixture = JSON.parse(readFileSync(new URL("./fixtures/croner/patterns.json", import.meta.url), "utf8")) as Fixture;

/**
 * The 5-field form of a pattern: the app takes 5 fields, so a 6-field pattern is compared on its
 * last five (its seconds dropped), a 7-field one too when its year is `*` or `?`. A 7-field pattern
 * with a real year has no 5-field form; the app refuses it (`refusedAsWritten` below).
 */
function fiveFieldForm(pattern: string): string | null {
  const fields = pattern.trim().split(/\s+/);
  if (fields.length === 6) return fields.slice(1).join(" ");
  if (fields.length === 7) return fields[6] === "*" || fields[6] === "?" ? fields.slice(1, 6).join(" ") : null;
  return pattern;
}

const asWritten = [...new Set(fixture.sources.flatMap((s) => s.patterns))];
const compared = [...new Set(asWritten.map(fiveFieldForm).filter((p): p is string => p !== null))];

/** croner's verdict with the options the app gives it: accepted, and fires at least once. */
function cronerAccepts(pattern: string): boolean {
  try {
    return new Cron(pattern, { timezone: "UTC", paused: true, mode: "5-part" }).nextRun(new Date(0)) !== null;
  } catch {
    return false;
  }
}

function appRefusal(pattern: string): string | null {
  try {
    validateTiming({ cron: pattern });
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** croner takes an ISO date as a one-off; a schedule repeats, so the app refuses it on purpose. */
const isOneOffDate = (pattern: string) => /^\d{4}-\d\d-\d\d/.test(pattern.trim());

const ZONES = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata"];
// Quiet weeks and the days before each 2026–2027 change in those zones.
const STARTS = [
  "2026-01-14T09:17:00Z",
  "2026-03-07T20:00:00Z",
  "2026-03-28T20:00:00Z",
  "2026-07-01T00:00:00Z",
  "2026-10-03T10:00:00Z",
  "2026-10-24T20:00:00Z",
  "2026-10-31T20:00:00Z",
  "2027-04-03T10:00:00Z",
].map((iso) => new Date(iso));
const FIRES = 6;
const HOUR_MS = 3_600_000;

const offsetAt = (ms: number, zone: string) => wallOf(ms, zone) - ms;
/** Within a day of an offset change: where the project's DST rule may differ from croner's on purpose. */
const nearChange = (ms: number, zone: string) => offsetAt(ms - 26 * HOUR_MS, zone) !== offsetAt(ms + 26 * HOUR_MS, zone);

function appFires(cron: string, timezone: string, from: Date): number[] {
  const out: number[] = [];
  let t = from;
  for (let i = 0; i < FIRES; i++) out.push((t = nextRunAfter({ cron, timezone }, t)).getTime());
  return out;
}

function cronerFires(cron: string, timezone: string, from: Date): number[] {
  return new Cron(cron, { timezone, paused: true, mode: "5-part" }).nextRuns(FIRES, from).map((d) => d.getTime());
}

describe("cron grammar: the patterns of croner's own tests", () => {
  it("the fixture holds croner's patterns, and some of them are the ones the app refused before", () => {
    expect(asWritten.length).toBeGreaterThan(250);
    for (const p of ["0 0 * * FRI#L", "0 0 * * 5#L", "0 0 0 * * MON#2", "0 0 * * FRIL", "0 12 1 * +MON", "0 ? * * * *", "* * * * * MON-SUN"]) {
      expect(asWritten).toContain(p);
    }
  });

  it.each(compared)("%j: accepted by the app exactly when croner accepts it", (pattern) => {
    const refusal = appRefusal(pattern);
    if (isOneOffDate(pattern)) {
      expect(refusal).toMatch(/a date fires once and a schedule repeats/);
      return;
    }
    if (cronerAccepts(pattern)) expect(refusal).toBeNull();
    else expect(refusal).toMatch(/^schedules: (invalid cron|cron .* never fires)/);
  });

  it("a 6- or 7-field pattern, as written, is refused with a reason (seconds and years are not supported)", () => {
    const refusedAsWritten = asWritten.filter((p) => [6, 7].includes(p.trim().split(/\s+/).length));
    expect(refusedAsWritten.length).toBeGreaterThan(100);
    for (const p of refusedAsWritten) expect(appRefusal(p)).toMatch(/fields; expected 5 fields .* seconds and years are not supported/);
  });

  const accepted = compared.filter((p) => !isOneOffDate(p) && cronerAccepts(p));

  it("most of them are accepted (a comparison of refusals only would prove little)", () => {
    expect(accepted.length).toBeGreaterThan(150);
  });

  it.each(accepted)("%j: fires when croner says, in every zone, apart from the DST rule's days", (pattern) => {
    let comparedFires = 0;
    for (const zone of ZONES) {
      for (const from of STARTS) {
        const app = appFires(pattern, zone, from);
        const croner = cronerFires(pattern, zone, from);
        // Past the shorter list, one side has not looked yet.
        const horizon = Math.min(app.at(-1)!, croner.at(-1) ?? Infinity);
        const keep = (t: number) => t <= horizon && !nearChange(t, zone);
        const ours = app.filter(keep);
        expect(ours.map((t) => new Date(t).toISOString()), `${pattern} in ${zone} from ${from.toISOString()}`).toEqual(
          croner.filter(keep).map((t) => new Date(t).toISOString()),
        );
        comparedFires += ours.length;
      }
    }
    expect(comparedFires).toBeGreaterThan(0);
  });
});

describe("cron grammar: what croner reads that the app refuses, each with its reason", () => {
  it.each([
    ["0 0 5L * *", /day-of-month "5L": L stands alone in day-of-month \(the last day of the month\); for a day and the last day write "5,L"/],
    ["0 0 1,,L * *", /day-of-month "1,,L" has an empty item between commas/],
    ["5? * * * *", /minute "5\?": \? means any value and stands alone, or before a step/],
    ["0 0 * * MON#", /day-of-week "MON#": # goes between a weekday and which one it is/],
    ["0 0 1 1JAN *", /month "1JAN" is not a valid value; month is 1–12 or JAN–DEC/],
    ["0 0 * * 0MON", /day-of-week "0MON" is not a valid value/],
    ["0 0 * * 1L-5", /day-of-week "1L" \(in "1L-5"\) is not a valid value/],
    ["0 0 * * SUN-SUN", /day-of-week "SUN-SUN" reads as every day .* write SUN for Sundays or \* for every day/],
    ["2200-01-01T00:00:00", /a date fires once and a schedule repeats; write 5 fields/],
  ])("%j: croner accepts it with a reading nobody means; the app refuses it and says why", (pattern, reason) => {
    expect(cronerAccepts(pattern)).toBe(true);
    expect(appRefusal(pattern)).toMatch(reason);
  });

  it.each([
    ["0 0 * * L", /day-of-week "L": L in day-of-week needs a weekday before it \(5L or FRI#L is the last Friday\)/],
    ["0 0 * * MON#6", /day-of-week "MON#6": # takes 1–5 or L/],
    ["0 0 * * *#2", /day-of-week "\*#2": # and L pick weekdays/],
    ["*/61 * * * *", /minute "\*\/61" has step 61; a step is at most 60/],
    ["5/15 * * * *", /minute "5\/15": a step goes after "\*" or a range, not a single value \("\*\/15" is every 15, "5-59\/15" starts at 5\)/],
    ["/5 * * * *", /minute "\/5": a step needs "\*" or a range before it/],
    ["0 0 15W-20 * *", /day-of-month "15W-20": W goes after a single day/],
    ["0 15W * * *", /hour "15W": W \(the weekday nearest a day\) belongs in day-of-month/],
    ["0 0 * 5L *", /month "5L": L belongs in day-of-month/],
    ["0 0 1#2 * *", /day-of-month "1#2": # \(the nth weekday, MON#2\) belongs in day-of-week/],
    ["0 +12 * * *", /hour "\+12": \+ goes once, at the start of day-of-week/],
    ["0 12 1 * +", /day-of-week "\+" needs weekdays after it/],
    ["0 0 LW,15 * *", /day-of-month "LW": LW \(the last weekday of the month\) is the whole day-of-month field/],
    ["0 0 * * FRI-MON", /day-of-week range "FRI-MON" runs backwards/],
    ["0 0 * 1- *", /month "1-" needs a value on each side of "-"/],
  ])("%j: refused by croner too, with the field, the token and what to write instead", (pattern, reason) => {
    expect(cronerAccepts(pattern)).toBe(false);
    expect(appRefusal(pattern)).toMatch(reason);
  });
});
