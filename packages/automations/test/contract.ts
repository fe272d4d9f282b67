import { afterEach, describe, expect, it } from "vitest";
import { anchorUnchanged, planEvent, PermanentActionError, RetryableActionError, sweepDue } from "../src/index";
import type { ClaimedRun, PlannedRun, Rule, RuleStore, Scheduler, SchedulerOptions } from "../src/types";
import { bookingEvent, DAY, HOUR, iso, MINUTE, reminderRule } from "./fixtures";

export interface SchedulerHarness<W> {
  scheduler: Scheduler<W>;
  /** Another scheduler on the same database (another sweep, or other options). */
  makeScheduler(options?: SchedulerOptions): Scheduler<W>;
  rules: RuleStore;
  /** Runs writes in one transaction, as the caller's own db.batch() would. */
  write(writes: W[]): Promise<void>;
  close(): Promise<void>;
}

const T0 = iso("2026-10-10T12:00:00Z");
const STARTS = "2026-10-12T10:00:00-06:00";
/** STARTS minus 24 h, in UTC: the reminder's due time. */
const DUE = iso("2026-10-11T16:00:00Z");
const contact = { id: "c1", timezone: null, fields: { tags: ["vip"] } };

function plainRun(id: string, dueAt: number, over: Partial<PlannedRun> = {}): PlannedRun {
  return {
    id,
    ruleId: "r",
    stepId: "0",
    action: "send",
    params: {},
    subjectType: "thing",
    subjectId: id,
    subjectVersion: 0,
    cancelKey: `thing:${id}`,
    contactId: "c1",
    eventId: `e_${id}`,
    eventType: "thing.created",
    anchorAt: null,
    dueAt,
    expiresAt: null,
    status: "pending",
    reason: null,
    createdAt: T0,
    ...over,
  };
}

/** A sweep on a clock that stands still, so explicit `now` values are exact. */
function sweep(options: Parameters<typeof sweepDue>[0]) {
  return sweepDue({ clock: () => 0, ...options });
}

function capRule(): Rule {
  return { id: "r", enabled: true, trigger: { events: ["thing.created"] }, steps: [{ id: "0", action: "send" }], frequencyCap: { max: 1, per: "1d" } };
}

/** The store contract: every Scheduler + RuleStore implementation runs these same cases. */
export function runSchedulerContract<W>(name: string, create: () => Promise<SchedulerHarness<W>>): void {
  describe(`${name}: scheduler contract`, () => {
    let h: SchedulerHarness<W>;
    const setup = async () => {
      h = await create();
      return h;
    };
    afterEach(async () => {
      await h?.close();
    });

    describe("planning into the store", () => {
      it("stores the reminder example as one pending run due 24 h before the booking", async () => {
        const { scheduler, write } = await setup();
        const plan = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0), T0, { contact });
        await write(scheduler.apply(plan));
        const run = await scheduler.get(plan.runs[0]!.id);
        expect(run).toMatchObject({
          status: "pending",
          dueAt: DUE,
          expiresAt: DUE + HOUR,
          anchorAt: iso("2026-10-12T16:00:00Z"),
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
          attempts: 0,
          reason: null,
        });
      });

      it("a move cancels the version-0 plan and plans version 1, in one batch", async () => {
        const { scheduler, write } = await setup();
        const created = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0), T0, { contact });
        await write(scheduler.apply(created));
        const moved = await planEvent([reminderRule()], bookingEvent("booking.rescheduled", 1, "2026-10-14T10:00:00-06:00", T0 + HOUR), T0 + HOUR, { contact, supersedes: true });
        await write(scheduler.apply(moved));
        expect(await scheduler.get(created.runs[0]!.id)).toMatchObject({ status: "cancelled", reason: "superseded" });
        expect(await scheduler.get(moved.runs[0]!.id)).toMatchObject({ status: "pending", subjectVersion: 1, dueAt: iso("2026-10-13T16:00:00Z") });
      });

      it("a cancellation cancels what is pending and plans nothing", async () => {
        const { scheduler, write } = await setup();
        const created = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0), T0, { contact });
        await write(scheduler.apply(created));
        const cancelled = await planEvent([reminderRule()], bookingEvent("booking.cancelled", 2, STARTS, T0 + HOUR), T0 + HOUR, { contact, supersedes: true });
        expect(cancelled.runs).toEqual([]);
        await write(scheduler.apply(cancelled));
        expect(await scheduler.get(created.runs[0]!.id)).toMatchObject({ status: "cancelled", reason: "superseded" });
        expect(await scheduler.claimDue(DUE, 10)).toEqual([]);
      });

      it("a redelivered event changes nothing: same ids, and it cannot cancel the plan it came with", async () => {
        const { scheduler, write } = await setup();
        const event = bookingEvent("booking.rescheduled", 1, STARTS, T0);
        const plan = await planEvent([reminderRule()], event, T0, { contact, supersedes: true });
        await write(scheduler.apply(plan));
        const before = await scheduler.get(plan.runs[0]!.id);
        const again = await planEvent([reminderRule()], event, T0 + MINUTE, { contact, supersedes: true });
        expect(again.runs.map((r) => r.id)).toEqual(plan.runs.map((r) => r.id));
        await write(scheduler.apply(again));
        expect(await scheduler.get(plan.runs[0]!.id)).toEqual(before);
      });

      it("a booking.created delivered after the reschedule plans nothing", async () => {
        const { scheduler, write } = await setup();
        const moved = await planEvent([reminderRule()], bookingEvent("booking.rescheduled", 1, "2026-10-14T10:00:00-06:00", T0 + HOUR), T0 + HOUR, { contact, supersedes: true });
        await write(scheduler.apply(moved));
        const late = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0), T0 + 2 * HOUR, { contact });
        expect(late.runs).toHaveLength(1);
        await write(scheduler.apply(late));
        expect(await scheduler.get(late.runs[0]!.id)).toBeNull();
        expect(await scheduler.get(moved.runs[0]!.id)).toMatchObject({ status: "pending" });
      });

      it("a booking.created delivered after the cancellation plans nothing", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.cancel("booking:b1", { version: 2, now: T0 + HOUR }));
        const late = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0), T0 + 2 * HOUR, { contact });
        await write(scheduler.apply(late));
        expect(await scheduler.get(late.runs[0]!.id)).toBeNull();
      });

      it("cancel only touches older versions, not the version it names, nor runs already claimed", async () => {
        const { scheduler, write } = await setup();
        const v0 = plainRun("v0", T0, { cancelKey: "k", subjectVersion: 0 });
        const v0claimed = plainRun("v0c", T0 - 1, { cancelKey: "k", subjectVersion: 0 });
        const v1 = plainRun("v1", T0 + HOUR, { cancelKey: "k", subjectVersion: 1 });
        await write(scheduler.schedule([v0, v0claimed, v1]));
        const claimed = await scheduler.claimDue(T0 - 1, 1);
        expect(claimed.map((r) => r.id)).toEqual(["v0c"]);
        await write(scheduler.cancel("k", { version: 1, now: T0, reason: "superseded" }));
        expect(await scheduler.get("v0")).toMatchObject({ status: "cancelled", reason: "superseded", finishedAt: T0 });
        expect(await scheduler.get("v0c")).toMatchObject({ status: "running" });
        expect(await scheduler.get("v1")).toMatchObject({ status: "pending" });
      });

      it("stores runs the planner skipped (no_anchor, late), with their reason, so the admin sees why nothing went out", async () => {
        const { scheduler, write } = await setup();
        const event = bookingEvent("booking.created", 0, "2026-10-12T10:00:00", T0);
        const plan = await planEvent([reminderRule()], event, T0, { contact });
        await write(scheduler.apply(plan));
        expect(await scheduler.get(plan.runs[0]!.id)).toMatchObject({ status: "skipped", reason: "no_anchor" });
        // An event that arrives after an outage, two hours past the reminder's due time.
        const late = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0, { subject: { type: "booking", id: "b2", version: 0 } }), DUE + 2 * HOUR, { contact });
        await write(scheduler.apply(late));
        expect(await scheduler.get(late.runs[0]!.id)).toMatchObject({ status: "skipped", reason: "late", dueAt: DUE, expiresAt: DUE + HOUR, finishedAt: DUE + 2 * HOUR });
        expect(await scheduler.claimDue(T0 + 10 * DAY, 10)).toEqual([]);
      });
    });

    describe("claiming", () => {
      it("claims due pending runs in due order up to the limit, with a token, a lease and one attempt", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.schedule([plainRun("c", T0 + 2), plainRun("a", T0), plainRun("b", T0 + 1), plainRun("later", T0 + HOUR)]));
        const claimed = await scheduler.claimDue(T0 + 5, 2);
        expect(claimed.map((r) => r.id).sort()).toEqual(["a", "b"]);
        for (const run of claimed) {
          expect(run).toMatchObject({ status: "running", attempts: 1, leaseUntil: T0 + 5 + 10 * MINUTE });
          expect(run.claimToken).toEqual(expect.any(String));
        }
        expect((await scheduler.claimDue(T0 + 5, 10)).map((r) => r.id)).toEqual(["c"]);
      });

      it("two sweeps at once claim disjoint rows", async () => {
        const { scheduler, makeScheduler, write } = await setup();
        const other = makeScheduler();
        await write(scheduler.schedule(Array.from({ length: 10 }, (_, i) => plainRun(`r${i}`, T0 + i))));
        const [a, b] = await Promise.all([scheduler.claimDue(T0 + 100, 6), other.claimDue(T0 + 100, 6)]);
        const ids = [...a, ...b].map((r) => r.id);
        expect(new Set(ids).size).toBe(10);
        expect(ids).toHaveLength(10);
        expect(a[0]!.claimToken).not.toBe(b[0]!.claimToken);
      });

      it("a lost lease: the run is claimed again, and the first holder's settles change nothing", async () => {
        const { makeScheduler, write } = await setup();
        const s = makeScheduler({ leaseMs: 1000 });
        await write(s.schedule([plainRun("x", T0)]));
        const [first] = await s.claimDue(T0, 1);
        expect(await s.claimDue(T0 + 999, 1)).toEqual([]);
        const [second] = await s.claimDue(T0 + 1000, 1);
        expect(second).toMatchObject({ id: "x", attempts: 2, leaseUntil: T0 + 2000 });
        expect(second!.claimToken).not.toBe(first!.claimToken);
        expect(await s.complete(first!, T0 + 1001)).toBe(false);
        expect(await s.skip(first!, T0 + 1001, "stale")).toBe(false);
        expect(await s.fail(first!, T0 + 1001, new Error("x"))).toBe(false);
        expect(await s.defer(first!, T0 + 1001, T0 + DAY)).toBe(false);
        expect(await s.retry(first!, T0 + 1001, { error: new Error("x") })).toBe("lost");
        expect(await s.complete(second!, T0 + 1002, { messageId: "m1" })).toBe(true);
        expect(await s.complete(second!, T0 + 1003)).toBe(false);
        expect(await s.get("x")).toMatchObject({ status: "done", messageId: "m1", finishedAt: T0 + 1002, claimToken: null });
      });

      it("a run whose holders keep dying is marked failed, not claimed forever", async () => {
        const { makeScheduler, write } = await setup();
        const s = makeScheduler({ leaseMs: 1000, maxAttempts: 3 });
        await write(s.schedule([plainRun("x", T0)]));
        for (let i = 0; i < 3; i++) expect(await s.claimDue(T0 + i * 1000, 1)).toHaveLength(1);
        expect(await s.claimDue(T0 + 3000, 1)).toEqual([]);
        const run = await s.get("x");
        expect(run).toMatchObject({ status: "failed", attempts: 3, claimToken: null, finishedAt: T0 + 3000 });
        expect(run!.lastError).toMatch(/lease/);
      });
    });

    describe("settling", () => {
      const claimOne = async (s: Scheduler<W>, at = T0) => {
        const [run] = await s.claimDue(at, 1);
        if (!run) throw new Error("nothing claimed");
        return run;
      };

      it("retry backs off 1 minute doubling to an hour, then fails when the attempts are used up", async () => {
        const { makeScheduler, write } = await setup();
        const s = makeScheduler({ maxAttempts: 9 });
        await write(s.schedule([plainRun("x", T0)]));
        const waits: number[] = [];
        let at = T0;
        for (let attempt = 1; attempt <= 8; attempt++) {
          const run = await claimOne(s, at);
          expect(run.attempts).toBe(attempt);
          expect(await s.retry(run, at, { error: new Error("503") })).toBe("retry");
          const stored = await s.get("x");
          waits.push(stored!.dueAt - at);
          expect(stored).toMatchObject({ status: "pending", lastError: "Error: 503" });
          at = stored!.dueAt;
        }
        expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60].map((m) => m * MINUTE));
        const last = await claimOne(s, at);
        expect(await s.retry(last, at, { error: new Error("503") })).toBe("failed");
        expect(await s.get("x")).toMatchObject({ status: "failed", attempts: 9 });
      });

      it("with the default options a run fails on its fifth failed attempt", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.schedule([plainRun("x", T0)]));
        let at = T0;
        const outcomes: string[] = [];
        for (let i = 0; i < 5; i++) {
          const run = await claimOne(scheduler, at);
          outcomes.push(await scheduler.retry(run, at));
          at = (await scheduler.get("x"))!.dueAt;
        }
        expect(outcomes).toEqual(["retry", "retry", "retry", "retry", "failed"]);
      });

      it("retry honours retryAfterMs when longer than the curve, never more than a day", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.schedule([plainRun("x", T0), plainRun("y", T0 + 1), plainRun("z", T0 + 2)]));
        const [x, y, z] = await scheduler.claimDue(T0 + 10, 3).then((rs) => rs.sort((a, b) => a.dueAt - b.dueAt));
        await scheduler.retry(x!, T0 + 10, { retryAfterMs: 30 * MINUTE });
        await scheduler.retry(y!, T0 + 10, { retryAfterMs: 3 * DAY });
        await scheduler.retry(z!, T0 + 10, { retryAfterMs: 5_000 });
        expect((await scheduler.get("x"))!.dueAt).toBe(T0 + 10 + 30 * MINUTE);
        expect((await scheduler.get("y"))!.dueAt).toBe(T0 + 10 + DAY);
        expect((await scheduler.get("z"))!.dueAt).toBe(T0 + 10 + MINUTE);
      });

      it("retry(run, now, { error }) waits the error's retryAfterMs when it is longer than the curve, never more than a day", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.schedule(["a", "b", "c", "d", "e"].map((id, i) => plainRun(id, T0 + i))));
        const [a, b, c, d, e] = await scheduler.claimDue(T0 + 10, 5).then((rs) => rs.sort((x, y) => x.dueAt - y.dueAt));
        // The error alone, as a caller holding a RetryableActionError (or a provider's 429) passes it.
        await scheduler.retry(a!, T0 + 10, { error: new RetryableActionError("429", 30 * MINUTE) });
        await scheduler.retry(b!, T0 + 10, { error: new RetryableActionError("429", 3 * DAY) });
        await scheduler.retry(c!, T0 + 10, { error: Object.assign(new Error("503"), { retryAfterMs: 5_000 }) });
        // Both given: the longer of the two (and of the curve) wins.
        await scheduler.retry(d!, T0 + 10, { error: new RetryableActionError("429", 40 * MINUTE), retryAfterMs: 10 * MINUTE });
        await scheduler.retry(e!, T0 + 10, { error: new RetryableActionError("429", 10 * MINUTE), retryAfterMs: 40 * MINUTE });
        expect((await scheduler.get("a"))!).toMatchObject({ dueAt: T0 + 10 + 30 * MINUTE, lastError: "RetryableActionError: 429" });
        expect((await scheduler.get("b"))!.dueAt).toBe(T0 + 10 + DAY);
        expect((await scheduler.get("c"))!.dueAt).toBe(T0 + 10 + MINUTE);
        expect((await scheduler.get("d"))!.dueAt).toBe(T0 + 10 + 40 * MINUTE);
        expect((await scheduler.get("e"))!.dueAt).toBe(T0 + 10 + 40 * MINUTE);
      });

      it("defer puts the run back for later without using an attempt, its lateness window moving with it", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.schedule([plainRun("x", T0, { expiresAt: T0 + HOUR })]));
        const run = await claimOne(scheduler);
        expect(await scheduler.defer(run, T0 + 1, T0 + 3 * HOUR)).toBe(true);
        expect(await scheduler.get("x")).toMatchObject({ status: "pending", attempts: 0, dueAt: T0 + 3 * HOUR, expiresAt: T0 + 4 * HOUR, claimToken: null });
        expect(await scheduler.defer(run, T0 + 2, T0 + 5 * HOUR)).toBe(false);
      });

      it("countRecent counts sends to the contact within the window, per rule", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.schedule([plainRun("old", T0), plainRun("new", T0 + 1), plainRun("otherRule", T0 + 2, { ruleId: "r2" }), plainRun("otherContact", T0 + 3, { contactId: "c2" })]));
        const runs = await scheduler.claimDue(T0 + 10, 10);
        for (const run of runs) await scheduler.complete(run, run.id === "old" ? T0 - 2 * DAY : T0 + 20);
        expect(await scheduler.countRecent({ ruleId: "r", contactId: "c1", since: T0 - DAY })).toBe(1);
        expect(await scheduler.countRecent({ ruleId: "r", contactId: "c1", since: T0 - 3 * DAY })).toBe(2);
      });

      it("purgeFinished deletes finished runs and old version records, and keeps what is still to do", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.schedule([plainRun("done", T0), plainRun("pending", T0 + DAY, { cancelKey: "k2" })]));
        await write(scheduler.cancel("k2", { version: 0, now: T0 }));
        await write(scheduler.cancel("thing:done", { version: 0, now: T0 }));
        const [run] = await scheduler.claimDue(T0, 1);
        await scheduler.complete(run!, T0 + 1);
        expect(await scheduler.purgeFinished(T0 + 2)).toBe(1);
        expect(await scheduler.get("done")).toBeNull();
        expect(await scheduler.get("pending")).toMatchObject({ status: "pending" });
        // The version record of a purged subject is gone, so an old plan for it is accepted again;
        // the one of a subject with pending runs is kept.
        await write(scheduler.schedule([plainRun("again", T0, { cancelKey: "thing:done", subjectVersion: -1 })]));
        expect(await scheduler.get("again")).not.toBeNull();
        await write(scheduler.schedule([plainRun("stale", T0, { cancelKey: "k2", subjectVersion: -1 })]));
        expect(await scheduler.get("stale")).toBeNull();
      });
    });

    describe("sweep", () => {
      async function planReminder(s: Scheduler<W>, write: (w: W[]) => Promise<void>, rule = reminderRule()) {
        const plan = await planEvent([rule], bookingEvent("booking.created", 0, STARTS, T0), T0, { contact });
        await write(s.apply(plan));
        return plan.runs[0]!.id;
      }

      it("sends a due run once, with the run id as the provider's idempotency key, and records the messageId", async () => {
        const { scheduler, rules, write } = await setup();
        await rules.put(reminderRule(), T0);
        const id = await planReminder(scheduler, write);
        const sent: string[] = [];
        const actions = { "email.send": async (run: ClaimedRun) => (sent.push(run.id), { messageId: `msg_${run.id}` }) };
        const report = await sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions, now: DUE });
        expect(report).toMatchObject({ claimed: 1, done: 1 });
        expect(sent).toEqual([id]);
        expect(await scheduler.get(id)).toMatchObject({ status: "done", messageId: `msg_${id}` });
        expect((await sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions, now: DUE + MINUTE })).claimed).toBe(0);
      });

      it("does not claim a run before it is due", async () => {
        const { scheduler, rules, write } = await setup();
        await rules.put(reminderRule(), T0);
        await planReminder(scheduler, write);
        const report = await sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions: {}, now: DUE - 1 });
        expect(report.claimed).toBe(0);
      });

      it("a sweep that was late skips a run past its lateness window as late, without running it", async () => {
        const { scheduler, rules, write } = await setup();
        await rules.put(reminderRule(), T0);
        const id = await planReminder(scheduler, write);
        let called = 0;
        const report = await sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions: { "email.send": () => void called++ }, now: DUE + HOUR + 1 });
        expect(report).toMatchObject({ claimed: 1, skipped: 1 });
        expect(called).toBe(0);
        expect(await scheduler.get(id)).toMatchObject({ status: "skipped", reason: "late" });
      });

      it("a sweep within the lateness window still sends", async () => {
        const { scheduler, rules, write } = await setup();
        await rules.put(reminderRule(), T0);
        const id = await planReminder(scheduler, write);
        await sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions: { "email.send": () => undefined }, now: DUE + HOUR });
        expect(await scheduler.get(id)).toMatchObject({ status: "done" });
      });

      it("skips runs of a rule that was disabled or deleted (rule_disabled)", async () => {
        const { scheduler, rules, write } = await setup();
        const id = await planReminder(scheduler, write);
        await rules.put({ ...reminderRule(), enabled: false }, T0);
        await sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions: { "email.send": () => undefined }, now: DUE });
        expect(await scheduler.get(id)).toMatchObject({ status: "skipped", reason: "rule_disabled" });

        const other = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0, { subject: { type: "booking", id: "b2", version: 0 } }), T0, { contact });
        await write(scheduler.apply(other));
        expect(await rules.delete("booking-reminder-24h")).toBe(true);
        await sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions: { "email.send": () => undefined }, now: DUE });
        expect(await scheduler.get(other.runs[0]!.id)).toMatchObject({ status: "skipped", reason: "rule_disabled" });
      });

      it("guards run in order and the first objection skips the run with its reason", async () => {
        const { scheduler, rules, write } = await setup();
        await rules.put(reminderRule(), T0);
        const id = await planReminder(scheduler, write);
        const asked: string[] = [];
        await sweep({
          scheduler,
          loadRule: (rid) => rules.get(rid),
          actions: { "email.send": () => undefined },
          guards: [
            async () => void asked.push("first"),
            async () => (asked.push("consent"), "no_consent"),
            async () => (asked.push("never"), "other"),
          ],
          now: DUE,
        });
        expect(asked).toEqual(["first", "consent"]);
        expect(await scheduler.get(id)).toMatchObject({ status: "skipped", reason: "no_consent" });
      });

      it("anchorUnchanged skips as stale a run whose booking moved or is gone, and passes one that did not", async () => {
        const { scheduler, rules, write } = await setup();
        await rules.put(reminderRule(), T0);
        const ids: string[] = [];
        for (const bookingId of ["same", "moved", "gone"]) {
          const plan = await planEvent([reminderRule()], bookingEvent("booking.created", 0, STARTS, T0, { subject: { type: "booking", id: bookingId, version: 0 }, contactId: bookingId }), T0, { contact });
          await write(scheduler.apply(plan));
          ids.push(plan.runs[0]!.id);
        }
        const now = { same: "2026-10-12T16:00:00Z", moved: "2026-10-13T10:00:00-06:00", gone: null } as Record<string, string | null>;
        await sweep({
          scheduler,
          loadRule: (rid) => rules.get(rid),
          actions: { "email.send": () => undefined },
          guards: [anchorUnchanged(async (run) => now[run.subjectId] ?? null)],
          now: DUE,
        });
        expect((await scheduler.get(ids[0]!))!.status).toBe("done");
        expect(await scheduler.get(ids[1]!)).toMatchObject({ status: "skipped", reason: "stale" });
        expect(await scheduler.get(ids[2]!)).toMatchObject({ status: "skipped", reason: "stale" });
      });

      it("action outcomes: {skip} skips, {defer} comes back later without an attempt, retryable:false fails, other errors retry", async () => {
        const { scheduler, rules, write } = await setup();
        await rules.put(capRule(), T0);
        await write(scheduler.schedule([plainRun("skip", T0, { action: "skip" }), plainRun("defer", T0, { action: "defer" }), plainRun("fatal", T0, { action: "fatal" }), plainRun("flaky", T0, { action: "flaky" }), plainRun("slow", T0, { action: "slow" }), plainRun("none", T0, { action: "unregistered" })].map((r) => ({ ...r, contactId: null }))));
        const report = await sweep({
          scheduler,
          loadRule: (rid) => rules.get(rid),
          actions: {
            skip: () => ({ skip: "no_address" }),
            defer: () => ({ defer: T0 + HOUR }),
            fatal: () => {
              throw new PermanentActionError("bad address");
            },
            flaky: () => {
              throw new Error("timeout");
            },
            slow: () => {
              throw new RetryableActionError("429", 20 * MINUTE);
            },
          },
          now: T0,
        });
        expect(report).toEqual({ claimed: 6, done: 0, skipped: 1, failed: 2, retried: 2, deferred: 1, lost: 0 });
        expect(await scheduler.get("skip")).toMatchObject({ status: "skipped", reason: "no_address" });
        expect(await scheduler.get("defer")).toMatchObject({ status: "pending", dueAt: T0 + HOUR, attempts: 0 });
        expect(await scheduler.get("fatal")).toMatchObject({ status: "failed", attempts: 1, lastError: "PermanentActionError: bad address" });
        expect(await scheduler.get("flaky")).toMatchObject({ status: "pending", dueAt: T0 + MINUTE, attempts: 1, lastError: "Error: timeout" });
        expect(await scheduler.get("slow")).toMatchObject({ status: "pending", dueAt: T0 + 20 * MINUTE });
        expect((await scheduler.get("none"))!.status).toBe("failed");
      });

      it("an error while checking a run (the rule store is down) retries it instead of losing it", async () => {
        const { scheduler, write } = await setup();
        await write(scheduler.schedule([plainRun("x", T0)]));
        let called = 0;
        const report = await sweep({
          scheduler,
          loadRule: () => Promise.reject(new Error("D1_ERROR: overloaded")),
          actions: { send: () => void called++ },
          now: T0,
        });
        expect(report).toMatchObject({ claimed: 1, retried: 1 });
        expect(called).toBe(0);
        expect(await scheduler.get("x")).toMatchObject({ status: "pending", attempts: 1, dueAt: T0 + MINUTE, lastError: "Error: D1_ERROR: overloaded" });
      });

      it("does not start a run whose lease ran out while the sweep was busy, reading options.clock", async () => {
        const { makeScheduler, rules, write } = await setup();
        const s = makeScheduler({ leaseMs: 10 * MINUTE });
        await rules.put(capRule(), T0);
        await write(s.schedule([plainRun("a", T0, { contactId: null }), plainRun("b", T0 + 1, { contactId: null })]));
        let clock = 1_000_000;
        const started: string[] = [];
        const report = await sweep({
          scheduler: s,
          loadRule: (rid) => rules.get(rid),
          actions: {
            send: (run) => {
              started.push(run.id);
              clock += 10 * MINUTE; // a provider that took the whole lease
            },
          },
          now: T0 + 1,
          clock: () => clock,
        });
        expect(started).toEqual(["a"]);
        // "a" settles: no other sweep took it over, so its token still holds. "b" is left alone.
        expect(report).toMatchObject({ claimed: 2, done: 1, lost: 1 });
        expect(await s.get("b")).toMatchObject({ status: "running", attempts: 1 });
        expect((await s.claimDue(T0 + 1 + 10 * MINUTE, 10)).map((r) => r.id)).toEqual(["b"]);
      });

      it("frequency cap: of two runs in flight at once exactly one passes", async () => {
        const { scheduler, makeScheduler, rules, write } = await setup();
        await rules.put(capRule(), T0);
        await write(scheduler.schedule([plainRun("first", T0), plainRun("second", T0 + 1)]));
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        let inAction!: () => void;
        const holding = new Promise<void>((resolve) => (inAction = resolve));
        const sent: string[] = [];
        const send = async (run: ClaimedRun) => {
          sent.push(run.id);
          if (run.id === "first") {
            inAction();
            await gate;
          }
        };
        const sweep1 = sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions: { send }, now: T0 + 5, limit: 1 });
        await holding;
        const report2 = await sweep({ scheduler: makeScheduler(), loadRule: (rid) => rules.get(rid), actions: { send }, now: T0 + 6, limit: 1 });
        release();
        const report1 = await sweep1;
        expect(sent).toEqual(["first"]);
        expect(report1.done).toBe(1);
        expect(report2.skipped).toBe(1);
        expect(await scheduler.get("second")).toMatchObject({ status: "skipped", reason: "frequency_cap" });
      });

      it("frequency cap: an earlier run that then fails leaves the later one skipped and the cap unspent", async () => {
        const { scheduler, makeScheduler, rules, write } = await setup();
        await rules.put(capRule(), T0);
        await write(scheduler.schedule([plainRun("first", T0), plainRun("second", T0 + 1), plainRun("third", T0 + HOUR)]));
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        let inAction!: () => void;
        const holding = new Promise<void>((resolve) => (inAction = resolve));
        const send = async (run: ClaimedRun) => {
          if (run.id === "first") {
            inAction();
            await gate;
            throw new PermanentActionError("rejected");
          }
          return { messageId: run.id };
        };
        const sweep1 = sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions: { send }, now: T0 + 5, limit: 1 });
        await holding;
        await sweep({ scheduler: makeScheduler(), loadRule: (rid) => rules.get(rid), actions: { send }, now: T0 + 6, limit: 1 });
        release();
        await sweep1;
        expect(await scheduler.get("first")).toMatchObject({ status: "failed" });
        expect(await scheduler.get("second")).toMatchObject({ status: "skipped", reason: "frequency_cap" });
        expect(await scheduler.countRecent({ ruleId: "r", contactId: "c1", since: T0 - DAY })).toBe(0);
        // The cap was not spent: the next run of the day goes out, and after it the cap holds.
        await sweep({ scheduler, loadRule: (rid) => rules.get(rid), actions: { send }, now: T0 + HOUR });
        expect(await scheduler.get("third")).toMatchObject({ status: "done" });
        expect(await scheduler.countRecent({ ruleId: "r", contactId: "c1", since: T0 - DAY })).toBe(1);
      });

      it("frequency cap: a run sent within the window blocks the next one; outside it, it does not", async () => {
        const { scheduler, rules, write } = await setup();
        await rules.put(capRule(), T0);
        await write(scheduler.schedule([plainRun("a", T0), plainRun("b", T0 + HOUR), plainRun("c", T0 + 2 * DAY)]));
        const actions = { send: () => undefined };
        const loadRule = (rid: string) => rules.get(rid);
        await sweep({ scheduler, loadRule, actions, now: T0 });
        await sweep({ scheduler, loadRule, actions, now: T0 + HOUR });
        await sweep({ scheduler, loadRule, actions, now: T0 + 2 * DAY });
        expect((await scheduler.get("a"))!.status).toBe("done");
        expect(await scheduler.get("b")).toMatchObject({ status: "skipped", reason: "frequency_cap" });
        expect((await scheduler.get("c"))!.status).toBe("done");
      });
    });

    describe("rule store", () => {
      it("stores, reads back, lists and deletes rules", async () => {
        const { rules } = await setup();
        const rule = reminderRule();
        await rules.put(rule, T0);
        expect(await rules.get(rule.id)).toEqual(rule);
        await rules.put({ ...rule, enabled: false }, T0 + 1);
        expect((await rules.get(rule.id))!.enabled).toBe(false);
        await rules.put({ ...capRule() }, T0);
        expect((await rules.list()).map((r) => r.id)).toEqual(["booking-reminder-24h", "r"]);
        expect(await rules.delete("r")).toBe(true);
        expect(await rules.delete("r")).toBe(false);
        expect(await rules.get("r")).toBeNull();
      });

      it("refuses to store an invalid rule", async () => {
        const { rules } = await setup();
        await expect(rules.put({ ...reminderRule(), timezone: "Mars/Olympus" }, T0)).rejects.toThrow(/invalid_timezone/);
      });
    });
  });
}
