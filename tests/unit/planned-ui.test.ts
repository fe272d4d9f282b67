import { describe, expect, test } from "vitest";
import { TIMED_REASON_CODES, TIMED_REASONS } from "@/lib/timed/reasons";
import { countdown, reasonSentence, runReasonCell, subjectWords } from "@/lib/ui/planned";

/** On the applet page and in the run log: the countdown to a due time and the reasons in words. */
const NOW = Date.parse("2026-10-11T10:00:00Z");
const at = (ms: number) => new Date(NOW + ms).toISOString();

describe("the countdown to a planned run", () => {
  test.each([
    [0, "due now"],
    [999, "due now"],
    [9_000, "in 9 s"],
    [4 * 60_000 + 12_000, "in 4 min 12 s"],
    [60 * 60_000, "in 1 h 0 min"],
    [(23 * 60 + 59) * 60_000 + 30_000, "in 23 h 59 min"],
    [(47 * 60 + 5) * 60_000, "in 47 h 5 min"],
    [2 * 86_400_000 + 3 * 3_600_000, "in 2 d 3 h"],
    [10 * 86_400_000, "in 10 d"],
    [-2 * 60_000, "due 2 min 0 s ago"],
  ] as const)("%i ms ahead reads %s", (ms, words) => {
    expect(countdown(at(ms), NOW)).toBe(words);
  });

  test("it moves on with the clock it is given (the page ticks it every second)", () => {
    const due = at(61_000);
    expect(countdown(due, NOW)).toBe("in 1 min 1 s");
    expect(countdown(due, NOW + 1_000)).toBe("in 1 min 0 s");
    expect(countdown(due, NOW + 2_000)).toBe("in 59 s");
  });

  test("a due time that is not a time reads as a dash", () => {
    expect(countdown("soon", NOW)).toBe("–");
  });
});

describe("why a timed run did not send, in plain words", () => {
  test.each(TIMED_REASON_CODES)("%s reads as the shared words", (reason) => {
    expect(reasonSentence("skipped", reason)).toBe(`Skipped: ${TIMED_REASONS[reason]}`);
  });

  test("the status says what happened; an unknown reason is shown without underscores", () => {
    expect(reasonSentence("cancelled", "superseded")).toBe("Cancelled: replaced by a newer version of the record");
    expect(reasonSentence("skipped", "no_consent")).toBe("Skipped: no consent");
    expect(reasonSentence("skipped", null)).toBeNull();
  });

  test("the run log's reason cell: a timed reason, a filter's skip reason, else the error", () => {
    const none = { plannedRunId: null, dueAt: null, reason: null };
    expect(runReasonCell({ status: "cancelled", error: null, plannedRunId: "p", dueAt: at(0), reason: "superseded" })).toEqual({ text: "Cancelled: replaced by a newer version of the record", tone: "reason" });
    expect(runReasonCell({ status: "skipped", error: "skipped: not a draft", ...none })).toEqual({ text: "not a draft", tone: "reason" });
    expect(runReasonCell({ status: "failed", error: "HTTP 500", ...none })).toEqual({ text: "HTTP 500", tone: "error" });
    expect(runReasonCell({ status: "planned", error: null, plannedRunId: "p", dueAt: at(0), reason: null })).toEqual({ text: "", tone: "reason" });
  });

  test("the record a run is about", () => {
    expect(subjectWords("b_1", 3)).toBe("b_1, version 3");
    expect(subjectWords("b_1", 3, "booking")).toBe("booking b_1, version 3");
    expect(subjectWords("b_1", null)).toBe("b_1");
    expect(subjectWords("", 1)).toBeNull();
  });
});
