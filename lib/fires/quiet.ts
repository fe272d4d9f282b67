import { formatAge } from "../core/overdue";

/**
 * Expected activity (pure, time passed in): when an applet counts as quiet.
 *
 * - Set by the user, for any trigger ("expect at least one event every N hours"; meant for those
 *   fed from outside: webhooks, mail, MQTT, a feed that should keep publishing): quiet once no event
 *   came for N hours, counted from the newest event, or from when the expectation was set (or the
 *   applet made) if none came since.
 * - Derived for schedules (the cron slots) and polled triggers (the interval): quiet once the slot
 *   or check that was due passed more than QUIET_GRACE_MS ago without being taken: the scheduler
 *   moves next_run_at as soon as it takes a slot, so a next_run_at left behind is a slot that did
 *   not fire (the worker down or stuck).
 *
 * A disabled applet is never quiet: nothing is expected of it.
 */
export const QUIET_GRACE_MS = 15 * 60_000;

/** Bounds of the user's expectation, in hours. */
export const EXPECT_MIN_HOURS = 1;
export const EXPECT_MAX_HOURS = 24 * 31;

export interface QuietInput {
  triggerType: string;
  /** How the trigger is fed (lib/triggers): "polled" derives its expectation from its slots. */
  feed: string | undefined;
  enabled: boolean;
  createdAt: string;
  expectEveryHours: number | null;
  expectSince: string | null;
  lastEventAt: string | null;
  /** A polled trigger's next slot or check (trigger_state.next_run_at). */
  nextRunAt: string | null;
  /** The applet's zone, that the text's times are in (UTC when unset). */
  zone?: string;
}

export interface Quiet {
  /** What is expected: "events" (user-set) or "slots" (a schedule's or poll's own timing). */
  basis: "events" | "slots";
  /** When it became quiet (the expectation ran out). */
  since: string;
  /** The sentence the alert and the applet page say. */
  text: string;
  lastAt: string | null;
}

const NOUNS: Record<string, string> = { webhook: "webhook", email: "email", imap: "email", mqtt: "MQTT message", rss: "new feed item", poll: "change", schedule: "scheduled fire" };
const nounOf = (type: string) => NOUNS[type] ?? "event";
/**
 * "2026-03-07 13:00 Europe/Berlin": the text goes out in an alert, read away from the UI where the
 * reader's zone is unknown, so it is in the applet's zone (UTC when it has none) and names it, as
 * the other alert texts do (lib/alerts/message).
 */
export function zonedWall(iso: string, zone = "UTC"): string {
  try {
    const f = new Intl.DateTimeFormat("sv-SE", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    return `${f.format(new Date(iso))} ${zone}`;
  } catch {
    return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  }
}
const hoursText = (h: number) => (h === 1 ? "hour" : Number.isInteger(h) ? `${h} h` : formatAge(h * 3_600_000));

export function quietness(i: QuietInput, now: Date): Quiet | null {
  if (!i.enabled) return null;
  const nowMs = now.getTime();
  if (i.expectEveryHours !== null && i.expectEveryHours > 0) {
    const expectMs = i.expectEveryHours * 3_600_000;
    const from = Math.max(...[i.lastEventAt, i.expectSince, i.createdAt].map((t) => (t ? Date.parse(t) : NaN)).filter(Number.isFinite));
    if (Number.isFinite(from) && nowMs - from > expectMs) {
      const noun = nounOf(i.triggerType);
      const silence = formatAge(nowMs - (i.lastEventAt ? Date.parse(i.lastEventAt) : from));
      const every = i.expectEveryHours === 1 ? "every hour" : `every ${hoursText(i.expectEveryHours)}`;
      const last = i.lastEventAt ? `Last one: ${zonedWall(i.lastEventAt, i.zone)}.` : "None has come yet.";
      return { basis: "events", since: new Date(from + expectMs).toISOString(), lastAt: i.lastEventAt, text: `No ${noun} for ${silence}; one is expected ${every}. ${last}` };
    }
  }
  if (i.feed === "polled" && i.nextRunAt) {
    const due = Date.parse(i.nextRunAt);
    if (Number.isFinite(due) && nowMs - due > QUIET_GRACE_MS) {
      const what = i.triggerType === "schedule" ? "fire" : "check";
      const late = formatAge(nowMs - due);
      const text =
        i.triggerType === "schedule"
          ? `No scheduled fire for ${late}: the one due at ${zonedWall(i.nextRunAt, i.zone)} has not happened (is the worker running?).`
          : `No ${what} of the trigger for ${late}: the one due at ${zonedWall(i.nextRunAt, i.zone)} has not happened (is the worker running?).`;
      return { basis: "slots", since: new Date(due + QUIET_GRACE_MS).toISOString(), lastAt: i.lastEventAt, text };
    }
  }
  return null;
}
