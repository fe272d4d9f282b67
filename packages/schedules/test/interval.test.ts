import { describe, expect, it } from "vitest";
import { parseInterval, ScheduleValidationError } from "../src/index";

describe("parseInterval", () => {
  it.each([
    ["100ms", 100],
    ["1ms", 1],
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["1d", 86_400_000],
    ["1w", 604_800_000],
    ["90m", 5_400_000],
  ])("%s → %d ms", (input, ms) => {
    expect(parseInterval(input)).toBe(ms);
  });

  it.each(["", "5", "m", "0s", "0ms", "-5m", "1.5h", "5 m", " 5m", "5M", "5min", "5mm", "1y", "1h30m", "99999999999999999w"])(
    "refuses %j with a ScheduleValidationError that names the value",
    (input) => {
      expect(() => parseInterval(input)).toThrow(ScheduleValidationError);
      expect(() => parseInterval(input)).toThrow(JSON.stringify(input));
    },
  );

  it("refuses a value that is not a string", () => {
    expect(() => parseInterval(5 as unknown as string)).toThrow(/invalid interval 5/);
  });
});
