import { conditionScope, evaluateConditions } from "./conditions";
import { durationMs } from "./duration";
import { DEFAULT_LATENESS, DEFAULT_TIMEZONE } from "./rule";
import { runId } from "./run-id";
import { instantToZonedWall, isValidTimeZone, parseClockTime, readInstant, zonedWallToInstant } from "./time";
import type { Contact, Plan, PlannedRun, PlanOptions, QuietHours, Rule, RuleEvent, RuleStep } from "./types";

/** "<subject type>:<subject id>" unless the event names its own cancel key. */
export function cancelKeyOf(event: RuleEvent): string {
  return event.cancelKey ?? `${event.subject.type}:${event.subject.id}`;
}

/** The contact's zone, else the quiet hours', else the rule's, else America/Mexico_City. */
export function contactTimeZone(rule: Rule, contact: Contact | null | undefined): string {
  for (const zone of [contact?.timezone, rule.quietHours?.timezone, rule.timezone]) {
    if (isValidTimeZone(zone)) return zone;
  }
  return DEFAULT_TIMEZONE;
}

function anchorOf(step: RuleStep, event: RuleEvent): number | null {
  const anchor = step.anchor ?? "event";
  if (anchor === "event") return readInstant(event.occurredAt);
  const path = anchor.startsWith("payload.") ? anchor.slice("payload.".length) : anchor;
  let value: unknown = event.payload;
  for (const key of path.split(".")) {
    if (value === null || typeof value !== "object" || !Object.prototype.hasOwnProperty.call(value, key)) return null;
    value = (value as Record<string, unknown>)[key];
  }
  return readInstant(value);
}

function nextDay(y: number, m: number, d: number): { year: number; month: number; day: number } {
  const t = new Date(Date.UTC(2000, 0, 1));
  t.setUTCFullYear(y, m - 1, d + 1);
  return { year: t.getUTCFullYear(), month: t.getUTCMonth() + 1, day: t.getUTCDate() };
}

/**
 * When `dueAt` falls inside the quiet window on the clock of `timeZone`, the instant the window
 * ends; otherwise null. The window is read on the wall clock, so on the night the clocks change
 * its end is resolved by zonedWallToInstant (a skipped end moves forward by the gap, a repeated
 * one is its first occurrence).
 */
export function quietHoursEnd(dueAt: number, quietHours: Pick<QuietHours, "start" | "end">, timeZone: string): number | null {
  const start = parseClockTime(quietHours.start);
  const end = parseClockTime(quietHours.end);
  if (start === null || end === null || start === end) return null;
  return quietEnd(dueAt, start, end, timeZone);
}

interface CompiledStep {
  step: RuleStep;
  offset: number;
  lateness: number | null;
}

interface CompiledRule {
  events: ReadonlySet<string>;
  steps: CompiledStep[];
  quiet: { start: number; end: number; skip: boolean } | null;
}

// Durations and clock times are parsed once per rule object, not once per event: the planner is
// on the hot path of every event, and rules are read far more often than they change. Keyed by
// identity, so a caller that edits a rule in place must pass a new object (parseRule does).
const compiled = new WeakMap<Rule, CompiledRule>();

function compile(rule: Rule): CompiledRule {
  let c = compiled.get(rule);
  if (c) return c;
  const start = rule.quietHours ? parseClockTime(rule.quietHours.start) : null;
  const end = rule.quietHours ? parseClockTime(rule.quietHours.end) : null;
  c = {
    events: new Set(rule.trigger.events),
    // parseRule gives every step its id; a rule built by hand may leave it out: the position, as there.
    steps: rule.steps.map((step, index) => ({
      step: step.id === undefined ? { ...step, id: String(index) } : step,
      offset: step.offset === undefined ? 0 : durationMs(step.offset),
      lateness: step.lateness === null ? null : durationMs(step.lateness ?? DEFAULT_LATENESS),
    })),
    quiet: start !== null && end !== null && start !== end ? { start, end, skip: rule.quietHours?.mode === "skip" } : null,
  };
  compiled.set(rule, c);
  return c;
}

function quietEnd(dueAt: number, start: number, end: number, timeZone: string): number | null {
  const wall = instantToZonedWall(dueAt, timeZone);
  const t = wall.hour * 60 + wall.minute + wall.second / 60;
  let endDate: { year: number; month: number; day: number };
  if (start < end) {
    if (t < start || t >= end) return null;
    endDate = wall;
  } else if (t >= start) {
    endDate = nextDay(wall.year, wall.month, wall.day);
  } else if (t < end) {
    endDate = wall;
  } else {
    return null;
  }
  const endAt = zonedWallToInstant({ year: endDate.year, month: endDate.month, day: endDate.day, hour: Math.floor(end / 60), minute: end % 60 }, timeZone);
  // On a night the clocks go back, the second 01:20 reads as inside a window ending 01:30 whose
  // (first) end has already passed: the window is over.
  return endAt > dueAt ? endAt : null;
}

/**
 * The runs one rule plans for one event: nothing when the rule does not apply (switched off,
 * another event type, conditions false), else one run per step, pending or already skipped with
 * the reason (no_anchor, late, quiet_hours).
 */
export function planRuns(rule: Rule, event: RuleEvent, now: number, options: PlanOptions = {}): PlannedRun[] {
  if (!rule.enabled) return [];
  const c = compile(rule);
  if (!c.events.has(event.type)) return [];
  const contact = options.contact ?? null;
  if (rule.conditions && !evaluateConditions(rule.conditions, conditionScope(event, contact))) return [];

  const contactId = event.contactId ?? contact?.id ?? null;
  const cancelKey = cancelKeyOf(event);
  const zone = c.quiet ? contactTimeZone(rule, contact) : DEFAULT_TIMEZONE;
  const { subject } = event;
  const runs: PlannedRun[] = [];

  // Steps usually share one anchor; read it once.
  let lastAnchor: string | undefined;
  let lastAnchorAt: number | null = null;
  for (const { step, offset, lateness } of c.steps) {
    const anchorName = step.anchor ?? "event";
    const anchorAt: number | null = anchorName === lastAnchor ? lastAnchorAt : anchorOf(step, event);
    lastAnchor = anchorName;
    lastAnchorAt = anchorAt;
    let dueAt = anchorAt === null ? now : anchorAt + offset;
    let expiresAt: number | null = null;
    let status: PlannedRun["status"] = "pending";
    let reason: PlannedRun["reason"] = null;
    if (anchorAt === null) {
      status = "skipped";
      reason = "no_anchor";
    } else if (lateness !== null && now - dueAt > lateness) {
      status = "skipped";
      reason = "late";
      expiresAt = dueAt + lateness;
    } else {
      if (c.quiet) {
        const end = quietEnd(dueAt, c.quiet.start, c.quiet.end, zone);
        if (end !== null) {
          // A reminder (due before its anchor) pushed to or past what it reminds of is useless.
          if (c.quiet.skip || (dueAt < anchorAt && end >= anchorAt)) {
            status = "skipped";
            reason = "quiet_hours";
          } else {
            dueAt = end;
          }
        }
      }
      expiresAt = lateness === null ? null : dueAt + lateness;
    }
    runs.push({
      id: runId({ ruleId: rule.id, stepId: step.id, subjectType: subject.type, subjectId: subject.id, subjectVersion: subject.version, contactId }),
      ruleId: rule.id,
      stepId: step.id,
      action: step.action,
      params: step.params ? { ...step.params } : {},
      subjectType: subject.type,
      subjectId: subject.id,
      subjectVersion: subject.version,
      cancelKey,
      contactId,
      eventId: event.id,
      eventType: event.type,
      anchorAt,
      dueAt,
      expiresAt,
      status,
      reason,
      createdAt: now,
    });
  }
  return runs;
}

/**
 * Plans one event against every rule. With `supersedes`, the plan also cancels the subject's
 * pending runs of older versions, whether or not any rule applies (a cancellation plans nothing).
 */
export async function planEvent(rules: readonly Rule[], event: RuleEvent, now: number, options: PlanOptions = {}): Promise<Plan> {
  return planEventSync(rules, event, now, options);
}

/** planEvent without the promise, for callers that plan many events in a loop. */
export function planEventSync(rules: readonly Rule[], event: RuleEvent, now: number, options: PlanOptions = {}): Plan {
  const key = cancelKeyOf(event);
  const runs: PlannedRun[] = [];
  for (const rule of rules) runs.push(...planRuns(rule, event, now, options));
  return {
    runs,
    cancel: options.supersedes ? { key, belowVersion: event.subject.version, reason: "superseded" } : null,
    subject: { key, version: event.subject.version },
    at: now,
  };
}
