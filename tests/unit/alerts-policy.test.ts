import { describe, expect, test } from "vitest";
import { composeMessage, plainError } from "@/lib/alerts/message";
import { DEFAULT_ALERT_SETTINGS, onPolled, onRunRetrying, onRunSettled, type AppletAlertState } from "@/lib/alerts/policy";
import type { AlertRow } from "@/lib/db/store/types";

const settings = { ...DEFAULT_ALERT_SETTINGS, channel: { type: "slack" as const, config: { webhook_url: "{{secrets.S}}" } } };
const state = (o: Partial<AppletAlertState> = {}): AppletAlertState => ({
  name: "A",
  enabled: true,
  failureStreak: 1,
  alertOpen: false,
  triggerAlertOpen: false,
  alertChannel: null,
  autoPause: null,
  ...o,
});
const run = (status: string) => ({ id: "r1", status, error: "boom", attempt: 3 });

describe("alert policy (pure)", () => {
  test("alert on the first failed attempt: only when chosen, only after attempt 1, only when alerts go somewhere; it opens the alert state for the recovery", () => {
    const retrying = { id: "r1", error: "boom", attempt: 1, maxAttempts: 5, nextAttemptAt: "2026-03-07T09:15:00.000Z" };
    const on = { ...settings, alertOnRetry: true };
    expect(onRunRetrying(state(), settings, retrying)).toBeNull();
    expect(onRunRetrying(state(), on, { ...retrying, attempt: 2 })).toBeNull();
    expect(onRunRetrying(state({ alertChannel: { mode: "none" } }), on, retrying)).toBeNull();
    expect(onRunRetrying(state(), on, retrying)).toEqual({
      alerts: [{ kind: "failure", runId: "r1", error: "boom", detail: { status: "retrying", attempt: 1, max_attempts: 5, next_attempt_at: "2026-03-07T09:15:00.000Z", streak: 1 } }],
      alertOpen: true,
    });
  });

  test("a failed or dead run alerts when a channel applies; none without one or with 'no alerts'", () => {
    expect(onRunSettled(state(), settings, run("dead")).alerts.map((a) => a.kind)).toEqual(["failure"]);
    expect(onRunSettled(state(), { ...settings, channel: null }, run("failed")).alerts).toEqual([]);
    expect(onRunSettled(state({ alertChannel: { mode: "none" } }), settings, run("failed"))).toMatchObject({ alerts: [], alertOpen: false });
    // An applet's own channel alerts even when Settings has none.
    expect(onRunSettled(state({ alertChannel: { type: "push", config: {} } }), { ...settings, channel: null }, run("failed")).alerts).toHaveLength(1);
  });

  test("auto-pause: the applet's choice wins over the default; only at the bound and only while enabled", () => {
    const on = { ...settings, autoPause: true, autoPauseAfter: 3 };
    expect(onRunSettled(state({ failureStreak: 2 }), on, run("failed")).pause).toBeNull();
    expect(onRunSettled(state({ failureStreak: 3 }), on, run("failed")).pause).toEqual({ reason: "Paused after 3 failed runs in a row" });
    expect(onRunSettled(state({ failureStreak: 3 }), on, run("failed")).alerts.map((a) => a.kind)).toEqual(["failure", "paused"]);
    expect(onRunSettled(state({ failureStreak: 3, autoPause: false }), on, run("failed")).pause).toBeNull();
    expect(onRunSettled(state({ failureStreak: 9, autoPause: true }), { ...settings, autoPauseAfter: 9 }, run("dead")).pause).not.toBeNull();
    expect(onRunSettled(state({ failureStreak: 3, enabled: false }), on, run("failed")).pause).toBeNull();
  });

  test("a success after an alert owes one recovery; a skipped run changes nothing", () => {
    expect(onRunSettled(state({ alertOpen: true }), settings, run("succeeded"))).toMatchObject({ alerts: [{ kind: "recovery" }], alertOpen: false });
    expect(onRunSettled(state({ alertOpen: false }), settings, run("succeeded")).alerts).toEqual([]);
    expect(onRunSettled(state({ alertOpen: true }), settings, run("skipped"))).toMatchObject({ alerts: [], alertOpen: true });
  });

  test("a trigger alerts when its error count crosses the threshold, not on every check after it", () => {
    expect(onPolled(state(), settings, { before: 1, after: 2, error: "x" })).toBeNull();
    expect(onPolled(state(), settings, { before: 2, after: 3, error: "x" })).toMatchObject({ alerts: [{ kind: "trigger", detail: { failures: 3 } }], triggerAlertOpen: true });
    expect(onPolled(state({ triggerAlertOpen: true }), settings, { before: 3, after: 4, error: "x" })).toBeNull();
    expect(onPolled(state({ triggerAlertOpen: true }), settings, { before: 4, after: 0, error: null })).toMatchObject({ alerts: [{ kind: "recovery" }], triggerAlertOpen: false });
    expect(onPolled(state(), settings, { before: 2, after: 0, error: null })).toBeNull();
  });
});

describe("alert messages", () => {
  const row = (o: Partial<AlertRow>): AlertRow => ({
    id: "al",
    appletId: "app1",
    appletName: "Orders",
    kind: "failure",
    runId: "r1",
    error: "executor: action 1 (http): http: POST x answered 500",
    detail: { status: "failed", attempt: 1 },
    status: "pending",
    foldedInto: null,
    message: null,
    channelType: null,
    providerAnswer: null,
    lockedUntil: null,
    dispatchedAt: null,
    sentAt: null,
    createdAt: "2026-03-07T09:14:00.000Z",
    ...o,
  });

  test("one failure: the applet, the error in plain words, the run link", () => {
    const m = composeMessage([row({})], "https://wt.example.com");
    expect(m).toEqual({
      title: 'whenthen: "Orders" failed',
      text: 'A run of "Orders" failed: action 1 (http): http: POST x answered 500\nhttps://wt.example.com/runs/r1',
      link: "https://wt.example.com/runs/r1",
    });
  });

  test("a digest: the latest failure and 'and N more' since the first", () => {
    const batch = [row({ runId: "r1" }), ...Array.from({ length: 37 }, (_, i) => row({ runId: `r${i + 2}`, createdAt: "2026-03-07T09:20:00.000Z" })), row({ runId: "r39", detail: { status: "dead", attempt: 5 } })];
    const m = composeMessage(batch, "https://wt.example.com");
    expect(m.text).toContain('A run of "Orders" went dead after 5 attempts');
    expect(m.text).toContain("…and 38 more failed runs since 09:14 UTC.");
    expect(m.link).toBe("https://wt.example.com/runs/r39");
  });

  test("times read in the applet's zone, named (an alert is read where the reader's zone is unknown); UTC when it has none", () => {
    const batch = [row({ runId: "r1" }), row({ runId: "r2", createdAt: "2026-03-07T09:20:00.000Z" })];
    expect(composeMessage(batch, "https://wt.example.com", "Europe/Berlin").text).toContain("…and 1 more failed run since 10:14 Europe/Berlin.");
    expect(composeMessage(batch, "https://wt.example.com").text).toContain("since 09:14 UTC.");
  });

  test("a first failed attempt with a retry scheduled says which attempt failed and when the next one runs", () => {
    const m = composeMessage([row({ detail: { status: "retrying", attempt: 1, max_attempts: 5, next_attempt_at: "2026-03-07T09:15:00.000Z" } })], "https://wt.example.com", "Europe/Berlin");
    expect(m.text).toContain('A run of "Orders" failed attempt 1 of 5 and will retry at 10:15 Europe/Berlin: action 1 (http)');
  });

  test("a batch that ends with a recovery says so; plain errors are one line and bounded", () => {
    const m = composeMessage([row({}), row({ kind: "recovery", runId: "r2", error: null, detail: { of: "runs" } })], "https://wt.example.com");
    expect(m.title).toBe('whenthen: "Orders" recovered');
    expect(m.text).toContain('"Orders" has since succeeded again (run r2).');
    expect(plainError("a\n  b")).toBe("a b");
    expect(plainError("x".repeat(600))).toHaveLength(500);
    expect(plainError(null)).toBe("no error message was recorded");
  });
});
