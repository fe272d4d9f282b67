import { describe, expect, test } from "vitest";
import { checkDefinition, type WaitStep } from "@/lib/definition";
import { planWait, waitSummary } from "@/lib/executor/wait";
import { parseWaitPath, waitLinks } from "@/lib/waits/links";

const def = (steps: unknown[]) => ({ version: 2, trigger: { type: "webhook", config: {} }, steps });
const send = { type: "http", config: { url: "https://example.com/x", method: "POST" } };
const problems = (steps: unknown[]) => {
  const r = checkDefinition(def(steps));
  return r.ok ? [] : r.problems;
};

describe("wait step validation", () => {
  test("each kind with what it needs saves; ids are given like other steps'", () => {
    const r = checkDefinition(
      def([
        { type: "wait", kind: "delay", duration: "2h" },
        { type: "wait", kind: "until", at: "{{trigger.body.starts_at}}", if_past: "skip_rest", timeout: "1d", on_timeout: [send] },
        { type: "wait", kind: "for_call", timeout: "30m" },
        { type: "wait", kind: "for_approval", message: "Post {{trigger.body.title}}?", on_deny: [send] },
        send,
      ]),
    );
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.definition.steps.map((s) => s.id)).toEqual(["wait_1", "wait_2", "wait_3", "wait_4", "http_3"]);
  });

  test("a delay needs a duration of at most 365 days; a bad duration is named", () => {
    expect(problems([{ type: "wait", kind: "delay" }, send])).toEqual([{ path: "steps.0.duration", message: 'is required for a delay, such as "2h" or "3d"' }]);
    expect(problems([{ type: "wait", kind: "delay", duration: "366d" }, send])).toEqual([{ path: "steps.0.duration", message: 'a wait lasts at most 365 days; "366d" is longer' }]);
    expect(problems([{ type: "wait", kind: "delay", duration: "soon" }, send])[0]).toMatchObject({ path: "steps.0.duration", message: expect.stringContaining('got "soon"') });
    expect(problems([{ type: "wait", kind: "delay", duration: "365d", timeout: "400d" }, send])[0]).toMatchObject({ path: "steps.0.timeout" });
  });

  test("an until written as a time without a zone is refused, as timed actions refuse it", () => {
    expect(problems([{ type: "wait", kind: "until", at: "2026-03-08T09:00:00" }, send])).toEqual([
      { path: "steps.0.at", message: '"2026-03-08T09:00:00" is a time without a zone (add Z or an offset such as +01:00)' },
    ]);
    expect(problems([{ type: "wait", kind: "until", at: "2026-03-08T09:00:00+01:00" }, send])).toEqual([]);
    expect(problems([{ type: "wait", kind: "until" }, send])[0]).toMatchObject({ path: "steps.0.at" });
  });

  test("fields another kind reads, on_timeout without a timeout, an unknown kind: each named by path", () => {
    expect(problems([{ type: "wait", kind: "for_call", duration: "1h", message: "x" }, send])).toEqual([
      { path: "steps.0.duration", message: "is not read by a for_call wait; leave it out" },
      { path: "steps.0.message", message: "is not read by a for_call wait; leave it out" },
    ]);
    expect(problems([{ type: "wait", kind: "for_approval", on_timeout: [send] }, send])).toEqual([
      { path: "steps.0.on_timeout", message: "runs when the wait times out: give the wait a timeout too" },
    ]);
    expect(problems([{ type: "wait", kind: "sleep" }, send])[0]).toMatchObject({ path: "steps.0.kind", message: "must be one of delay, until, for_call, for_approval" });
  });

  test("steps inside on_timeout and on_deny are checked at their paths; a timing there is refused", () => {
    expect(problems([{ type: "wait", kind: "for_approval", timeout: "1h", on_timeout: [{ ...send, timing: { at: "1h" } }], on_deny: [{ type: "nope" }] }, send])).toEqual([
      { path: "steps.0.on_timeout.0.timing", message: "only top-level actions can carry a timing; this action is inside a wait step" },
      expect.objectContaining({ path: "steps.0.on_deny.0.type" }),
    ]);
  });
});

describe("planning a wait", () => {
  const now = new Date("2026-03-07T14:02:00.000Z");
  const base = { now, seq: 0, renderedAt: null, message: null, timezone: "UTC" };

  test("a delay resumes after its duration; a shorter timeout resumes it as a timeout", () => {
    const p = planWait({ id: "w", type: "wait", kind: "delay", duration: "3d" }, base);
    expect(p).toMatchObject({ kind: "wait", wait: { resumeAt: new Date("2026-03-10T14:02:00.000Z"), resumeAs: "time" } });
    const t = planWait({ id: "w", type: "wait", kind: "delay", duration: "3d", timeout: "1h" }, base);
    expect(t).toMatchObject({ kind: "wait", wait: { resumeAt: new Date("2026-03-07T15:02:00.000Z"), resumeAs: "timeout" } });
  });

  test("an until already past carries on, or skips the rest; one that rendered a non-time says what it rendered", () => {
    const step = { id: "w", type: "wait", kind: "until", at: "{{x}}" } as WaitStep;
    expect(planWait(step, { ...base, renderedAt: "2026-03-07T10:00:00Z" })).toMatchObject({ kind: "past", skipRest: false });
    expect(planWait({ ...step, if_past: "skip_rest" } as WaitStep, { ...base, renderedAt: "2026-03-07T10:00:00Z" })).toMatchObject({ kind: "past", skipRest: true });
    expect(planWait(step, { ...base, renderedAt: "" })).toMatchObject({ kind: "problem", problem: "until did not render a time: the time rendered empty" });
    expect(planWait(step, { ...base, renderedAt: String(Date.parse("2026-03-08T00:00:00Z")) })).toMatchObject({ kind: "wait", wait: { resumeAt: new Date("2026-03-08T00:00:00Z") } });
  });

  test("the run log's words: what it waits for and when it times out", () => {
    expect(waitSummary({ kind: "for_approval", detail: { timezone: "Europe/Berlin" }, timeoutAt: "2026-03-07T15:02:00.000Z" }, now)).toBe("waiting for approval — times out 16:02");
    expect(waitSummary({ kind: "delay", detail: { timezone: "UTC", until: "2026-03-10T14:02:00.000Z", duration: "3d" }, timeoutAt: null }, now)).toBe("waiting until 2026-03-10 14:02 (3d)");
    expect(waitSummary({ kind: "for_call", detail: { timezone: "UTC" }, timeoutAt: "2026-03-09T00:00:00.000Z" }, now)).toBe("waiting for a call to its resume URL — times out 2026-03-09 00:00");
  });
});

describe("wait links", () => {
  test("a link names its run and wait under an unguessable MAC; a changed MAC or wait number is refused", () => {
    const links = waitLinks("https://w.example", "s3cret", "run_1", 2);
    const path = new URL(links.approve_url).pathname;
    expect(parseWaitPath(path, "s3cret")).toEqual({ runId: "run_1", seq: 2, action: "approve" });
    expect(parseWaitPath(new URL(links.resume_url).pathname, "s3cret")).toEqual({ runId: "run_1", seq: 2, action: "resume" });
    expect(parseWaitPath(path, "other")).toBeNull();
    expect(parseWaitPath(path.replace("/2/", "/3/"), "s3cret")).toBeNull();
    expect(links.resume_url).not.toBe(waitLinks("https://w.example", "s3cret", "run_1", 3).resume_url);
  });
});
