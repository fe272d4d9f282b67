import { describe, expect, it } from "vitest";
import { planEvent, planRuns, runId } from "../src/index";
import type { Rule } from "../src/types";
import { bookingEvent, DAY, HOUR, iso, MINUTE, reminderRule } from "./fixtures";

const T0 = iso("2026-10-10T12:00:00Z");
const STARTS = "2026-10-12T10:00:00-06:00";
const vip = { id: "c1", fields: { tags: ["vip"] } };

describe("planRuns: the reminder of the spec", () => {
  it("plans one run 24 h before the booking, on the rule's zone, with its lateness window", () => {
    const runs = planRuns(reminderRule(), bookingEvent("booking.created", 0, STARTS, T0), T0, { contact: vip });
    expect(runs).toEqual([
      {
        id: runId({ ruleId: "booking-reminder-24h", stepId: "email", subjectType: "booking", subjectId: "b1", subjectVersion: 0, contactId: "c1" }),
        ruleId: "booking-reminder-24h",
        stepId: "email",
        action: "email.send",
        params: { template: "booking.reminder" },
        subjectType: "booking",
        subjectId: "b1",
        subjectVersion: 0,
        cancelKey: "booking:b1",
        contactId: "c1",
        eventId: "evt_booking.created_0",
        eventType: "booking.created",
        anchorAt: iso("2026-10-12T16:00:00Z"),
        dueAt: iso("2026-10-11T16:00:00Z"),
        expiresAt: iso("2026-10-11T17:00:00Z"),
        status: "pending",
        reason: null,
        createdAt: T0,
      },
    ]);
  });

  it("a rule built by hand without step ids plans each step under its position, as parseRule would", () => {
    const base = reminderRule({ quietHours: undefined });
    const steps = [
      { action: "email.send", offset: "-24h", anchor: "startsAt" },
      { action: "sms.send", offset: "-2h", anchor: "startsAt" },
    ] as unknown as Rule["steps"];
    const runs = planRuns({ ...base, steps }, bookingEvent("booking.created", 0, STARTS, T0), T0);
    expect(runs.map((r) => r.stepId)).toEqual(["0", "1"]);
    expect(new Set(runs.map((r) => r.id)).size).toBe(2);
  });

  it("anchors on epoch milliseconds as well as ISO text", () => {
    const [a] = planRuns(reminderRule(), bookingEvent("booking.created", 0, STARTS, T0), T0);
    const [b] = planRuns(reminderRule(), bookingEvent("booking.created", 0, iso(STARTS), T0), T0);
    expect(b!.dueAt).toBe(a!.dueAt);
  });

  it("anchors on the event time with anchor 'event' and a positive offset", () => {
    const rule = reminderRule({ steps: [{ id: "follow-up", action: "email.send", offset: "2h", anchor: "event" }], quietHours: undefined });
    const [run] = planRuns(rule, bookingEvent("booking.created", 0, STARTS, T0), T0);
    expect(run).toMatchObject({ anchorAt: T0, dueAt: T0 + 2 * HOUR, status: "pending" });
  });

  it("an anchor without a zone is refused, not guessed: skipped no_anchor; so is a missing one", () => {
    const [noZone] = planRuns(reminderRule(), bookingEvent("booking.created", 0, "2026-10-12T10:00:00", T0), T0);
    expect(noZone).toMatchObject({ status: "skipped", reason: "no_anchor", anchorAt: null });
    const [missing] = planRuns(reminderRule(), { ...bookingEvent("booking.created", 0, STARTS, T0), payload: {} }, T0);
    expect(missing).toMatchObject({ status: "skipped", reason: "no_anchor" });
  });

  it("a rule that does not apply writes nothing: switched off, another event type, conditions false", () => {
    const event = bookingEvent("booking.created", 0, STARTS, T0);
    expect(planRuns({ ...reminderRule(), enabled: false }, event, T0)).toEqual([]);
    expect(planRuns(reminderRule(), { ...event, type: "booking.paid" }, T0)).toEqual([]);
    expect(planRuns(reminderRule(), event, T0, { contact: { id: "c1", fields: { tags: ["do-not-message", "vip"] } } })).toEqual([]);
  });

  it("plans every step, each with its own id", () => {
    const rule = reminderRule({
      steps: [
        { id: "day", action: "email.send", offset: "-24h", anchor: "startsAt" },
        { id: "hour", action: "sms.send", offset: "-1h", anchor: "startsAt" },
        { action: "email.send", offset: "2h", anchor: "startsAt" },
      ],
    });
    const runs = planRuns(rule, bookingEvent("booking.created", 0, STARTS, T0), T0);
    expect(runs.map((r) => [r.stepId, r.dueAt - iso(STARTS)])).toEqual([["day", -DAY], ["hour", -HOUR], ["2", 2 * HOUR]]);
    expect(new Set(runs.map((r) => r.id)).size).toBe(3);
  });
});

describe("planRuns: lateness", () => {
  it("a step further past due than its lateness window is skipped late, keeping expiresAt", () => {
    const due = iso("2026-10-11T16:00:00Z");
    const [run] = planRuns(reminderRule(), bookingEvent("booking.created", 0, STARTS, T0), due + HOUR + 1);
    expect(run).toMatchObject({ status: "skipped", reason: "late", dueAt: due, expiresAt: due + HOUR });
  });

  it("a step exactly at the end of its window is still planned", () => {
    const due = iso("2026-10-11T16:00:00Z");
    const [run] = planRuns(reminderRule(), bookingEvent("booking.created", 0, STARTS, T0), due + HOUR);
    expect(run).toMatchObject({ status: "pending", dueAt: due });
  });

  it("lateness null is never too late; the default is one hour", () => {
    const event = bookingEvent("booking.created", 0, STARTS, T0);
    const never = reminderRule({ steps: [{ id: "e", action: "a", offset: "-24h", anchor: "startsAt", lateness: null }] });
    expect(planRuns(never, event, T0 + 30 * DAY)[0]).toMatchObject({ status: "pending", expiresAt: null });
    const byDefault = reminderRule({ steps: [{ id: "e", action: "a", offset: "-24h", anchor: "startsAt" }] });
    const due = iso("2026-10-11T16:00:00Z");
    expect(planRuns(byDefault, event, due + HOUR + 1)[0]).toMatchObject({ status: "skipped", reason: "late" });
    expect(planRuns(byDefault, event, due)[0]).toMatchObject({ expiresAt: due + HOUR });
  });
});

describe("planRuns: quiet hours", () => {
  // 2026-10-12 in Mexico City is -06:00.
  const at = (local: string) => `2026-10-12T${local}:00-06:00`;
  const afterRule = (over: Partial<Rule> = {}) =>
    reminderRule({ steps: [{ id: "thanks", action: "email.send", offset: "30m", anchor: "startsAt" }], ...over });

  it("defers a due time inside the window to its end, on the contact's clock", () => {
    const [run] = planRuns(afterRule(), bookingEvent("booking.created", 0, at("21:00"), T0), T0);
    expect(run).toMatchObject({ status: "pending", dueAt: iso("2026-10-13T08:00:00-06:00"), expiresAt: iso("2026-10-13T09:00:00-06:00") });
  });

  it("the window's start is inside it and its end is not", () => {
    const [atStart] = planRuns(afterRule(), bookingEvent("booking.created", 0, at("20:30"), T0), T0);
    expect(atStart!.dueAt).toBe(iso("2026-10-13T08:00:00-06:00"));
    const [atEnd] = planRuns(afterRule(), bookingEvent("booking.created", 0, at("07:30"), T0), T0);
    expect(atEnd!.dueAt).toBe(iso(at("08:00")));
    const [before] = planRuns(afterRule(), bookingEvent("booking.created", 0, at("20:29"), T0), T0);
    expect(before!.dueAt).toBe(iso(at("20:59")));
  });

  it("a window that does not cross midnight", () => {
    const rule = afterRule({ quietHours: { start: "13:00", end: "15:00" } });
    const [run] = planRuns(rule, bookingEvent("booking.created", 0, at("13:00"), T0), T0);
    expect(run!.dueAt).toBe(iso(at("15:00")));
  });

  it("skip mode drops a due time inside the window (quiet_hours)", () => {
    const rule = afterRule({ quietHours: { start: "21:00", end: "08:00", mode: "skip" } });
    const [run] = planRuns(rule, bookingEvent("booking.created", 0, at("23:00"), T0), T0);
    expect(run).toMatchObject({ status: "skipped", reason: "quiet_hours" });
  });

  it("a reminder pushed to or past what it reminds of is dropped (quiet_hours)", () => {
    const rule = reminderRule({ steps: [{ id: "soon", action: "sms.send", offset: "-1h", anchor: "startsAt" }] });
    const [pushedTo] = planRuns(rule, bookingEvent("booking.created", 0, at("08:00"), T0), T0);
    expect(pushedTo).toMatchObject({ status: "skipped", reason: "quiet_hours" });
    const [pushedPast] = planRuns(rule, bookingEvent("booking.created", 0, at("07:30"), T0), T0);
    expect(pushedPast).toMatchObject({ status: "skipped", reason: "quiet_hours" });
    const [stillBefore] = planRuns(rule, bookingEvent("booking.created", 0, at("08:30"), T0), T0);
    expect(stillBefore).toMatchObject({ status: "pending", dueAt: iso(at("08:00")) });
  });

  it("the clock is the contact's zone, else the quiet hours', else the rule's, else America/Mexico_City", () => {
    // 03:00Z is 23:00 in New York (quiet), 05:00 in Berlin (quiet), 21:00 in Mexico City (quiet), 20:00 in Los Angeles.
    const event = bookingEvent("booking.created", 0, "2026-10-13T03:00:00Z", T0);
    const base = afterRule({ steps: [{ id: "s", action: "a", anchor: "startsAt" }] });
    const due = (rule: Rule, contactZone?: string | null) => planRuns(rule, event, T0, { contact: { id: "c1", timezone: contactZone ?? null } })[0]!.dueAt;
    const ruleLa = { ...base, timezone: "America/Los_Angeles" };
    expect(due(ruleLa, "Europe/Berlin")).toBe(iso("2026-10-13T08:00:00+02:00"));
    expect(due({ ...ruleLa, quietHours: { start: "21:00", end: "08:00", timezone: "America/New_York" } }, "Not/AZone")).toBe(iso("2026-10-13T08:00:00-04:00"));
    expect(due(ruleLa)).toBe(iso("2026-10-13T03:00:00Z"));
    const { timezone: _unused, ...noZone } = base;
    expect(due(noZone)).toBe(iso("2026-10-13T08:00:00-06:00"));
  });

  it("the window is judged at the due time: a deferred run expires an hour after the window ends", () => {
    const [run] = planRuns(afterRule(), bookingEvent("booking.created", 0, at("22:00"), T0), T0);
    expect(run!.expiresAt! - run!.dueAt).toBe(HOUR);
  });
});

describe("planEvent", () => {
  it("gathers the runs of every rule, and names the subject's key and version", async () => {
    const other: Rule = { ...reminderRule(), id: "second" };
    const plan = await planEvent([reminderRule(), other], bookingEvent("booking.created", 0, STARTS, T0), T0, { contact: vip });
    expect(plan.runs.map((r) => r.ruleId)).toEqual(["booking-reminder-24h", "second"]);
    expect(plan).toMatchObject({ cancel: null, subject: { key: "booking:b1", version: 0 }, at: T0 });
  });

  it("supersedes: returns plan.cancel for older versions, even when no rule applies", async () => {
    const plan = await planEvent([reminderRule()], bookingEvent("booking.cancelled", 2, STARTS, T0), T0, { supersedes: true });
    expect(plan.runs).toEqual([]);
    expect(plan.cancel).toEqual({ key: "booking:b1", belowVersion: 2, reason: "superseded" });
  });

  it("event.cancelKey overrides the default key", async () => {
    const plan = await planEvent([reminderRule()], bookingEvent("booking.rescheduled", 1, STARTS, T0, { cancelKey: "calendar:42" }), T0, { supersedes: true });
    expect(plan.cancel!.key).toBe("calendar:42");
    expect(plan.runs[0]!.cancelKey).toBe("calendar:42");
  });

  it("a redelivered event plans the same run ids; a new version plans new ones", async () => {
    const a = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0), T0);
    const b = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0), T0 + 5 * MINUTE);
    const c = await planEvent([reminderRule()], bookingEvent("booking.rescheduled", 1, STARTS, T0), T0);
    expect(b.runs.map((r) => r.id)).toEqual(a.runs.map((r) => r.id));
    expect(c.runs[0]!.id).not.toBe(a.runs[0]!.id);
  });
});
