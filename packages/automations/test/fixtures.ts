import { parseRule } from "../src/index";
import type { Rule, RuleEvent, RuleInput } from "../src/types";

/** The reminder rule of the spec, switched on. */
export function reminderRule(overrides: Partial<RuleInput> = {}): Rule {
  const parsed = parseRule({
    id: "booking-reminder-24h",
    enabled: true,
    version: 1,
    trigger: { events: ["booking.created", "booking.rescheduled"] },
    conditions: { all: [{ field: "contact.tags", op: "not_in", value: ["do-not-message"] }] },
    steps: [
      {
        id: "email",
        action: "email.send",
        offset: "-24h",
        anchor: "startsAt",
        params: { template: "booking.reminder" },
        lateness: "1h",
      },
    ],
    quietHours: { start: "21:00", end: "08:00" },
    frequencyCap: { max: 1, per: "1d" },
    timezone: "America/Mexico_City",
    ...overrides,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.rule;
}

export function bookingEvent(type: string, version: number, startsAt: string | number, occurredAt: number, extra: Partial<RuleEvent> = {}): RuleEvent {
  return {
    id: `evt_${type}_${version}`,
    type,
    occurredAt,
    subject: { type: "booking", id: "b1", version },
    contactId: "c1",
    payload: { startsAt },
    ...extra,
  };
}

export const HOUR = 3_600_000;
export const MINUTE = 60_000;
export const DAY = 86_400_000;
export const iso = (text: string) => Date.parse(text);
