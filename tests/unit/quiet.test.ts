import { describe, expect, test } from "vitest";
import { composeMessage } from "@/lib/alerts/message";
import type { AlertRow } from "@/lib/db/store/types";
import { quietness, type QuietInput } from "@/lib/fires/quiet";
import { slotsToFire } from "@/lib/triggers/schedule";

const base: QuietInput = { triggerType: "webhook", feed: "http", enabled: true, createdAt: "2026-03-01T00:00:00.000Z", expectEveryHours: 24, expectSince: "2026-03-01T00:00:00.000Z", lastEventAt: "2026-03-07T12:00:00.000Z", nextRunAt: null };

describe("expected activity (pure)", () => {
  test("a webhook expected every 24 h is quiet after 24 h without an event, counted from the newest event", () => {
    expect(quietness(base, new Date("2026-03-08T11:59:59.000Z"))).toBeNull();
    expect(quietness(base, new Date("2026-03-08T14:00:00.000Z"))?.text).toBe("No webhook for 26 h; one is expected every 24 h. Last one: 2026-03-07 12:00 UTC.");
  });
  test("a quiet alert's times are in the applet's zone and name it, like the other alert texts, not in UTC", () => {
    expect(quietness({ ...base, zone: "Europe/Berlin" }, new Date("2026-03-08T14:00:00.000Z"))?.text).toBe("No webhook for 26 h; one is expected every 24 h. Last one: 2026-03-07 13:00 Europe/Berlin.");
    const slot = { ...base, triggerType: "schedule", feed: "polled", expectEveryHours: null, nextRunAt: "2026-07-01T07:00:00.000Z", zone: "America/New_York" };
    expect(quietness(slot, new Date("2026-07-01T08:00:00.000Z"))?.text).toContain("the one due at 2026-07-01 03:00 America/New_York has not happened");
  });
  test("with no event yet the silence counts from when the expectation was set; a disabled applet is never quiet", () => {
    const none = { ...base, lastEventAt: null, expectSince: "2026-03-07T00:00:00.000Z" };
    expect(quietness(none, new Date("2026-03-07T23:00:00.000Z"))).toBeNull();
    expect(quietness(none, new Date("2026-03-08T01:00:00.000Z"))?.text).toBe("No webhook for 25 h; one is expected every 24 h. None has come yet.");
    expect(quietness({ ...base, enabled: false }, new Date("2026-04-01T00:00:00.000Z"))).toBeNull();
  });
  test("a schedule is quiet when its slot passed more than 15 minutes ago without being taken", () => {
    const s = { ...base, triggerType: "schedule", feed: "polled", expectEveryHours: null, nextRunAt: "2026-03-07T13:00:00.000Z" };
    expect(quietness(s, new Date("2026-03-07T13:15:00.000Z"))).toBeNull();
    expect(quietness(s, new Date("2026-03-07T13:16:00.000Z"))?.basis).toBe("slots");
  });
});

describe("the fire ledger of a schedule after downtime (pure)", () => {
  test("more missed slots than the ledger writes one by one end in one row that counts the rest", () => {
    const r = slotsToFire({ cron: "* * * * *", timezone: "UTC" }, new Date("2026-03-07T12:00:00.000Z"), new Date("2026-03-07T14:00:30.000Z"));
    expect(r.slots.length).toBe(1);
    expect(r.notes.length).toBe(51);
    expect(r.notes[50]).toMatchObject({ outcome: "missed", count: 120 - 50 });
    expect(r.notes[50]!.detail).toMatch(/^…and 70 more times up to 2026-03-07T14:00:00.000Z: /);
  });
});

describe("quiet alerts in words", () => {
  const row = (kind: AlertRow["kind"], detail: Record<string, unknown>): AlertRow => ({
    id: "a1", appletId: "ap", appletName: "Orders", kind, runId: null, error: null, detail, status: "pending", foldedInto: null, message: null, channelType: null, providerAnswer: null, lockedUntil: null, dispatchedAt: null, sentAt: null, createdAt: "2026-03-08T14:00:00.000Z",
  });
  test("the quiet alert and its recovery notice say what happened, with the applet's link", () => {
    const q = composeMessage([row("quiet", { text: "No webhook for 26 h; one is expected every 24 h. Last one: 2026-03-07 12:00 UTC." })], "https://w.test");
    expect(q.title).toBe('whenthen: "Orders" has gone quiet');
    expect(q.text).toBe('"Orders" has gone quiet. No webhook for 26 h; one is expected every 24 h. Last one: 2026-03-07 12:00 UTC.\nhttps://w.test/applets/ap');
    const r = composeMessage([row("recovery", { of: "quiet", text: "Events came back: the newest at 2026-03-08 20:00 UTC." })], "https://w.test");
    expect(r.title).toBe('whenthen: "Orders" is active again');
    expect(r.text).toBe('"Orders" is no longer quiet. Events came back: the newest at 2026-03-08 20:00 UTC.\nhttps://w.test/applets/ap');
  });
});
