/**
 * Planning an event's timed actions with @vibedout/automations' planner: the applet's
 * rule (lib/timed/rule), the event as the library reads it (subject and version from the
 * definition's templates, the trigger's payload under `trigger`), and, for each planned run, what
 * the app adds: its action, the explanation in plain words, and the warning of a run with no anchor.
 * Pure: the clock's `now` comes in, nothing is read or written here.
 */
import { conditionScope, contactTimeZone, evaluateConditions, instantToZonedWall, planEventSync, readInstant, type Contact, type Rule, type RuleEvent } from "@vibedout/automations";
import { isValidTimeZone } from "@whenthen/schedules";
import { timedAction, type Definition } from "../definition";
import type { PlannedRunInsert, PlanWrite } from "../db/store/types";
import { renderTemplate, type TemplateContext } from "../template";
import { reasonWords } from "./reasons";
import { hasTimedActions, ruleOrThrow } from "./rule";
import { durationOf } from "./schema";

export interface TimedEvent {
  appletId: string;
  definition: Definition;
  /** The trigger's payload: what templates see as `trigger`. */
  payload: Record<string, unknown>;
  eventId: string;
  /** The event's arrival (epoch ms): the "event" anchor, and the plan's now. */
  receivedAt: number;
  maxAttempts: number;
}

export interface TimedRunView {
  id: string;
  actionIndex: number;
  dueAt: number | null;
  originalDueAt: number | null;
  timezone: string;
  status: "pending" | "skipped";
  reason: string | null;
  explanation: string;
}

export interface TimedPlan {
  /** What the store writes with the event; null when the applet has no timed action. */
  write: PlanWrite | null;
  runs: TimedRunView[];
  /** Things the user should know (a missing anchor: the path and the value; an unreadable version). */
  warnings: string[];
}

// Rules are built once per definition object and event type (the planner's own cache is keyed by the rule).
const rules = new WeakMap<Definition, Map<string, Rule | null>>();
function ruleOf(appletId: string, def: Definition, eventType: string): Rule | null {
  let byType = rules.get(def);
  if (!byType) rules.set(def, (byType = new Map<string, Rule | null>()));
  const key = `${appletId}\u0000${eventType}`;
  if (!byType.has(key)) byType.set(key, ruleOrThrow(appletId, def, { eventType, enabled: true }));
  return byType.get(key) ?? null;
}

/** The value at a dotted path ("trigger.body.starts_at") of `root`; undefined when it leads nowhere. */
export function valueAt(root: unknown, path: string): unknown {
  let value: unknown = root;
  for (const key of path.split(".")) {
    if (value === null || typeof value !== "object" || !Object.prototype.hasOwnProperty.call(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

const show = (v: unknown): string => {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

/** Why an anchor could not be read, naming the path and the value. */
export function anchorProblem(path: string, value: unknown): string {
  if (value === undefined) return `no anchor: ${path} is missing`;
  if (value === null || value === "") return `no anchor: ${path} is empty`;
  if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value.trim())) {
    return `no anchor: ${path} is ${show(value)}, a time without a zone (add Z or an offset such as -06:00)`;
  }
  return `no anchor: ${path} is ${show(value)}, not a time`;
}

const pad = (n: number) => String(n).padStart(2, "0");
/** "2026-10-11 10:00" on the clock of `zone`. */
export function wallText(ms: number, zone: string): string {
  const w = instantToZonedWall(ms, zone);
  return `${w.year}-${pad(w.month)}-${pad(w.day)} ${pad(w.hour)}:${pad(w.minute)}`;
}
const clockText = (ms: number, zone: string) => wallText(ms, zone).slice(11);

/**
 * The longest subject or contact id, version or zone a template renders to: they are keys, stored
 * with every planned run, and they are rendered on the web process's loop as a webhook arrives,
 * so a template naming a sender's field many times stops here instead of building it all.
 */
export const TIMED_KEY_CHARS = 500;

/** The rendered text, or null when it is longer than TIMED_KEY_CHARS (with a warning naming `what`). */
function render(template: string, ctx: TemplateContext, what: string, warnings: string[]): string | null {
  const r = renderTemplate(template, ctx, { maxLength: TIMED_KEY_CHARS + 1 });
  if (!r.truncated) return r.value.trim();
  warnings.push(`timed: the ${what} ${template} renders longer than ${TIMED_KEY_CHARS} characters, so it is not used`);
  return null;
}

/** A version as the library needs it: a whole number, or a time (ISO with zone, epoch) as milliseconds. */
export function readVersion(text: string): number | null {
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : null;
  }
  return readInstant(text);
}

/** Plans the event's timed actions. Throws only on a definition that did not pass checkDefinition. */
export function planTimed(e: TimedEvent): TimedPlan {
  const def = e.definition;
  if (!hasTimedActions(def)) return { write: null, runs: [], warnings: [] };
  const warnings: string[] = [];
  const timed = def.timed ?? {};
  const ctx: TemplateContext = { trigger: e.payload };

  const typeValue = timed.supersede ? valueAt(ctx, timed.supersede.path) : undefined;
  const eventType = typeof typeValue === "string" && typeValue !== "" ? typeValue : "event";
  const cancelOnly = timed.supersede?.cancel_values?.includes(eventType) ?? false;
  const supersedes = cancelOnly || (timed.supersede?.values.includes(eventType) ?? false);

  let subject = { type: "event", id: e.eventId, version: 0 };
  if (timed.subject) {
    const id = render(timed.subject.id, ctx, "subject id", warnings) ?? "";
    const versionText = render(timed.subject.version, ctx, "subject version", warnings);
    const version = versionText === null ? null : readVersion(versionText);
    if (id === "") warnings.push(`timed: the subject id ${timed.subject.id} rendered empty; this event is planned as a record of its own`);
    if (version === null && versionText !== null) warnings.push(`timed: the subject version ${timed.subject.version} is ${show(versionText)}, not a number or a time; version 0 is used`);
    if (id !== "") subject = { type: timed.subject.type ?? "record", id, version: version ?? 0 };
  }

  let contact: Contact | null = null;
  if (timed.contact) {
    const id = render(timed.contact.id, ctx, "contact id", warnings) ?? "";
    const zone = timed.contact.timezone ? (render(timed.contact.timezone, ctx, "contact time zone", warnings) ?? "") : "";
    if (zone !== "" && !isValidTimeZone(zone)) warnings.push(`timed: the contact's time zone ${show(zone)} is not an IANA zone; the applet's is used`);
    if (id !== "") contact = { id, timezone: isValidTimeZone(zone) ? zone : null };
  }

  const rule = ruleOf(e.appletId, def, eventType);
  if (!rule) return { write: null, runs: [], warnings };
  const event: RuleEvent = {
    id: e.eventId,
    type: eventType,
    occurredAt: e.receivedAt,
    subject,
    contactId: contact?.id ?? null,
    payload: ctx,
    // Scoped to the applet: two applets may speak of the same record id.
    cancelKey: `${e.appletId}:${subject.type}:${subject.id}`,
  };
  if (!cancelOnly && rule.conditions && !evaluateConditions(rule.conditions, conditionScope(event, contact))) {
    warnings.push("timed: the conditions do not hold for this event, so its timed actions are not planned");
  }
  const plan = planEventSync(cancelOnly ? [] : [rule], event, e.receivedAt, { contact, supersedes });
  const zone = contactTimeZone(rule, contact);

  const runs: PlannedRunInsert[] = [];
  const views: TimedRunView[] = [];
  for (const r of plan.runs) {
    const actionIndex = Number(r.params.actionIndex);
    const timing = timedAction(def, actionIndex)!.timing!;
    const anchorPath = timing.anchor ?? "event";
    const unmoved = r.anchorAt === null ? null : r.anchorAt + (durationOf(timing.at) ?? 0);
    const originalDueAt = unmoved !== null && r.status === "pending" && unmoved !== r.dueAt ? unmoved : null;
    let explanation: string;
    if (r.reason === "no_anchor") {
      explanation = anchorProblem(anchorPath, valueAt(ctx, anchorPath));
      warnings.push(`action ${actionIndex + 1} (${timedAction(def, actionIndex)!.type}): ${explanation}`);
    } else if (r.status === "skipped") {
      explanation = `not planned: ${reasonWords(r.reason)}` + (unmoved !== null ? ` (it was due ${wallText(unmoved, zone)} in ${zone})` : "");
    } else {
      explanation = `would run at ${wallText(r.dueAt, zone)} in ${zone}` + (originalDueAt !== null ? `, moved from ${clockText(originalDueAt, zone)} by quiet hours` : "");
    }
    runs.push({ ...r, appletId: e.appletId, actionIndex, note: explanation, originalDueAt, maxAttempts: e.maxAttempts });
    views.push({ id: r.id, actionIndex, dueAt: r.reason === "no_anchor" ? null : r.dueAt, originalDueAt, timezone: zone, status: r.status, reason: r.reason, explanation });
  }
  return { write: { runs, cancel: plan.cancel, subject: plan.subject, at: plan.at }, runs: views, warnings };
}
