import { readInstant } from "@vibedout/automations";
import type { Timed, Timing } from "@/lib/definition";
import { samplePaths } from "@/lib/ui/format";

/**
 * The editor's timed-action forms as plain data: an action card's "Timing" and the applet's
 * "Timed actions" settings, form state ⇄ the definition's `timing` and `timed`, and which of the
 * sample's values look like a time an action can be anchored at. Pure, like ./fields.ts, so
 * tests/unit/editor-timing.test.ts pins it. Keys the form does not know pass through untouched.
 */

/** The definition's shapes (lib/timed/schema.ts). */
export type ActionTiming = Timing;
export type AppletTimed = Timed;

// ---- an action's timing --------------------------------------------------------------------------

export interface TimingDraft {
  /** "now": the action runs with the event, as actions always did; the other fields are kept for a switch back. */
  mode: "now" | "later";
  /** As typed: "-24h", "30m", "2d". */
  at: string;
  /** "event" (the event's arrival) or a path into the ingredients: "trigger.body.starts_at". */
  anchor: string;
  /** As typed; empty means the default (1 h). */
  lateness: string;
  /** Never too late (lateness null). */
  neverLate: boolean;
  /** Skip at send time if the anchor value changed since planning (default on). */
  guardAnchor: boolean;
  /** The stored timing, so keys the form does not know survive an edit. */
  original: Record<string, unknown>;
}

export const NO_TIMING: TimingDraft = { mode: "now", at: "", anchor: "event", lateness: "", neverLate: false, guardAnchor: true, original: {} };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const text = (v: unknown): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");

export function timingToForm(timing: unknown): TimingDraft {
  if (!isRecord(timing)) return NO_TIMING;
  return {
    mode: "later",
    at: text(timing.at),
    anchor: typeof timing.anchor === "string" && timing.anchor.trim() ? timing.anchor : "event",
    lateness: text(timing.lateness),
    neverLate: timing.lateness === null,
    guardAnchor: timing.guard_anchor !== false,
    original: timing,
  };
}

/** The action's `timing`, or undefined when it runs now. */
export function timingFromForm(t: TimingDraft): ActionTiming | undefined {
  if (t.mode === "now") return undefined;
  const known = new Set(["at", "anchor", "lateness", "guard_anchor"]);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(t.original)) if (!known.has(k)) out[k] = v;
  // Sent even when empty, so the save names the field instead of planning at the anchor itself.
  out.at = t.at.trim();
  const anchor = t.anchor.trim();
  if (anchor && anchor !== "event") out.anchor = anchor;
  else if (t.original.anchor === "event") out.anchor = "event";
  if (t.neverLate) out.lateness = null;
  else if (t.lateness.trim()) out.lateness = t.lateness.trim();
  // Only a path anchor can change; the default (on) is left out unless it was stored.
  if (!t.guardAnchor) out.guard_anchor = false;
  else if (t.original.guard_anchor === true) out.guard_anchor = true;
  return out as unknown as ActionTiming;
}

// ---- the applet's timed settings -----------------------------------------------------------------

export interface TimedDraft {
  subjectId: string;
  subjectVersion: string;
  subjectType: string;
  supersedePath: string;
  /** Comma-separated, as typed. */
  supersedeValues: string;
  cancelValues: string;
  contactId: string;
  contactTimezone: string;
  quietStart: string;
  quietEnd: string;
  /** "" is the default (defer). */
  quietMode: "" | "defer" | "skip";
  quietTimezone: string;
  capMax: string;
  capPer: string;
  /** The conditions, in the order shown: each in `all` (must hold) or `any` (one of them must). */
  conditions: ConditionDraft[];
  /** The stored `timed`, so keys the form does not know survive an edit. */
  original: Record<string, unknown>;
}

export const NO_TIMED: TimedDraft = {
  subjectId: "",
  subjectVersion: "",
  subjectType: "",
  supersedePath: "",
  supersedeValues: "",
  cancelValues: "",
  contactId: "",
  contactTimezone: "",
  quietStart: "",
  quietEnd: "",
  quietMode: "",
  quietTimezone: "",
  capMax: "",
  capPer: "",
  conditions: [],
  original: {},
};

export interface ConditionDraft {
  group: "all" | "any";
  /** "trigger.body.status", "contact.id", "event.type". */
  field: string;
  op: string;
  /** As typed: JSON when it reads as JSON other than a string (42, true, ["a","b"]), else the text itself. */
  value: string;
}

export const CONDITION_OP_WORDS: Record<string, string> = {
  eq: "is",
  ne: "is not",
  gt: "is more than",
  gte: "is at least",
  lt: "is less than",
  lte: "is at most",
  in: "is one of",
  not_in: "is none of",
  contains: "contains",
  exists: "exists",
};

/** A stored condition value as the form shows it; a string that would read as JSON is shown quoted. */
export function conditionValueText(v: unknown): string {
  if (v === undefined) return "";
  if (typeof v === "string") {
    try {
      JSON.parse(v);
      return JSON.stringify(v);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v);
}

/** What the form's value text means: JSON when it parses, else the text; undefined when empty. */
export function conditionValueOf(text: string): unknown {
  const t = text.trim();
  if (t === "") return undefined;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return t;
  }
}

function conditionsToForm(c: unknown): ConditionDraft[] {
  if (!isRecord(c)) return [];
  return (["all", "any"] as const).flatMap((group) =>
    (Array.isArray(c[group]) ? (c[group] as unknown[]) : []).filter(isRecord).map((x) => ({ group, field: text(x.field), op: text(x.op) || "eq", value: conditionValueText(x.value) })),
  );
}

/** The rows as the definition's `conditions`; the index of each row inside its group is its path's. */
export function conditionsFromForm(rows: ConditionDraft[]): { all?: unknown[]; any?: unknown[] } | undefined {
  const of = (group: "all" | "any") =>
    rows
      .filter((r) => r.group === group)
      .map((r) => {
        const value = conditionValueOf(r.value);
        return { field: r.field.trim(), op: r.op, ...(value !== undefined ? { value } : {}) };
      });
  const all = of("all");
  const any = of("any");
  if (!all.length && !any.length) return undefined;
  return { ...(all.length ? { all } : {}), ...(any.length ? { any } : {}) };
}

/** The `timed.conditions.<group>.<n>` path of row `index`. */
export function conditionPath(rows: ConditionDraft[], index: number): string {
  const row = rows[index]!;
  const n = rows.slice(0, index).filter((r) => r.group === row.group).length;
  return `conditions.${row.group}.${n}`;
}

const list = (v: unknown): string => (Array.isArray(v) ? v.map(text).join(", ") : text(v));
const splitList = (s: string): string[] =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);

export function timedToForm(timed: unknown): TimedDraft {
  if (!isRecord(timed)) return NO_TIMED;
  const sub = isRecord(timed.subject) ? timed.subject : {};
  const sup = isRecord(timed.supersede) ? timed.supersede : {};
  const contact = isRecord(timed.contact) ? timed.contact : {};
  const quiet = isRecord(timed.quiet_hours) ? timed.quiet_hours : {};
  const cap = isRecord(timed.frequency_cap) ? timed.frequency_cap : {};
  return {
    subjectId: text(sub.id),
    subjectVersion: text(sub.version),
    subjectType: text(sub.type),
    supersedePath: text(sup.path),
    supersedeValues: list(sup.values),
    cancelValues: list(sup.cancel_values),
    contactId: text(contact.id),
    contactTimezone: text(contact.timezone),
    quietStart: text(quiet.start),
    quietEnd: text(quiet.end),
    quietMode: quiet.mode === "defer" || quiet.mode === "skip" ? quiet.mode : "",
    quietTimezone: text(quiet.timezone),
    capMax: text(cap.max),
    capPer: text(cap.per),
    conditions: conditionsToForm(timed.conditions),
    original: timed,
  };
}

/**
 * The applet's `timed`, or undefined when every field is empty. A part is sent as soon as one of
 * its fields is filled in, the rest as typed, so a save names the field that is missing.
 */
export function timedFromForm(t: TimedDraft): AppletTimed | undefined {
  const parts = ["subject", "supersede", "contact", "quiet_hours", "frequency_cap", "conditions"];
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(t.original)) if (!parts.includes(k)) out[k] = v;
  // Each part keeps the keys the form does not know, too.
  const kept = (part: string, known: string[]): Record<string, unknown> => {
    const stored = t.original[part];
    return isRecord(stored) ? Object.fromEntries(Object.entries(stored).filter(([k]) => !known.includes(k))) : {};
  };
  const filled = (...values: string[]) => values.some((v) => v.trim() !== "");
  if (filled(t.subjectId, t.subjectVersion, t.subjectType)) {
    out.subject = { ...kept("subject", ["id", "version", "type"]), id: t.subjectId.trim(), version: t.subjectVersion.trim(), ...(t.subjectType.trim() ? { type: t.subjectType.trim() } : {}) };
  }
  if (filled(t.supersedePath, t.supersedeValues, t.cancelValues)) {
    const cancel = splitList(t.cancelValues);
    out.supersede = { ...kept("supersede", ["path", "values", "cancel_values"]), path: t.supersedePath.trim(), values: splitList(t.supersedeValues), ...(cancel.length ? { cancel_values: cancel } : {}) };
  }
  if (filled(t.contactId, t.contactTimezone)) {
    out.contact = { ...kept("contact", ["id", "timezone"]), id: t.contactId.trim(), ...(t.contactTimezone ? { timezone: t.contactTimezone } : {}) };
  }
  if (filled(t.quietStart, t.quietEnd, t.quietTimezone) || t.quietMode) {
    out.quiet_hours = { ...kept("quiet_hours", ["start", "end", "mode", "timezone"]), start: t.quietStart.trim(), end: t.quietEnd.trim(), ...(t.quietMode ? { mode: t.quietMode } : {}), ...(t.quietTimezone ? { timezone: t.quietTimezone } : {}) };
  }
  if (filled(t.capMax, t.capPer)) {
    const n = Number(t.capMax.trim());
    // Not a number: sent as typed, so the save says "frequency cap › max" is not one.
    out.frequency_cap = { ...kept("frequency_cap", ["max", "per"]), max: t.capMax.trim() !== "" && Number.isFinite(n) ? n : t.capMax.trim(), per: t.capPer.trim() };
  }
  const conditions = conditionsFromForm(t.conditions);
  if (conditions) out.conditions = conditions;
  return Object.keys(out).length ? (out) : undefined;
}

/** Whether any of the applet's timed settings is filled in (the section opens itself then). */
export const hasTimedSettings = (t: TimedDraft): boolean => timedFromForm(t) !== undefined;

// ---- time-looking sample values ------------------------------------------------------------------

/**
 * What a sample value is as an anchor. `time`: the planner reads it as an instant (ISO 8601 with
 * its zone, or epoch milliseconds). `no_zone`: ISO text without a zone, which the planner refuses
 * (`no_anchor`) rather than guess. `seconds`: a number that is epoch seconds, which the planner
 * would read as milliseconds (a time in January 1970). Anything else is not a time.
 */
export type TimeLook = { kind: "time"; at: number } | { kind: "no_zone" } | { kind: "seconds" };

const ISO_NO_ZONE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?$/;
// Epoch milliseconds from 2001-09-09 to 2286-11-20; seconds in the same span.
const MS_RANGE = [1e12, 1e13] as const;
const S_RANGE = [1e9, 1e10] as const;

export function timeLook(value: unknown): TimeLook | null {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return null;
    if (value >= MS_RANGE[0] && value < MS_RANGE[1]) return { kind: "time", at: value };
    if (Number.isInteger(value) && value >= S_RANGE[0] && value < S_RANGE[1]) return { kind: "seconds" };
    return null;
  }
  if (typeof value !== "string") return null;
  const at = readInstant(value);
  if (at !== null) return { kind: "time", at };
  return ISO_NO_ZONE.test(value.trim()) ? { kind: "no_zone" } : null;
}

export interface AnchorOption {
  /** The path as an anchor: "trigger.body.starts_at". */
  path: string;
  /** The sample's value there, as shown. */
  sample: string;
  look: TimeLook;
}

/** The value at a path samplePaths made ("trigger.body.items[0].at", `trigger.headers["x-at"]`). */
export function valueAtPath(sample: Record<string, unknown>, path: string): unknown {
  const keys: string[] = [];
  for (const m of path.replace(/^trigger/, "").matchAll(/\.([A-Za-z_$][\w$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g)) {
    keys.push(m[1] ?? m[2] ?? (JSON.parse(m[3]!) as string));
  }
  return keys.reduce<unknown>((v, k) => (v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), sample);
}

/**
 * The sample's values that look like a time, as anchors to pick from: times first, then those
 * the planner would refuse (no zone, seconds), each with its sample value.
 */
export function anchorOptions(sample: Record<string, unknown>): AnchorOption[] {
  const out: AnchorOption[] = [];
  for (const found of samplePaths(sample, "trigger", 6)) {
    const value = valueAtPath(sample, found);
    const path = anchorPath(found);
    if (!path) continue;
    const look = timeLook(value);
    if (look) out.push({ path, sample: typeof value === "string" ? value : JSON.stringify(value), look });
  }
  const rank = (o: AnchorOption) => (o.look.kind === "time" ? 0 : 1);
  return out.sort((a, b) => rank(a) - rank(b));
}

/**
 * A sample path as an anchor path, dots only (`trigger.body.items.0.at`, `trigger.headers.x-at`),
 * the form the definition accepts; null for a key that has no such form (a space, a dot in it).
 */
export function anchorPath(path: string): string | null {
  const dotted = path.replace(/\[(\d+)\]/g, ".$1").replace(/\[("(?:[^"\\]|\\.)*")\]/g, (_, key: string) => `.${JSON.parse(key) as string}`);
  return /^trigger(\.[A-Za-z0-9_$-]+)+$/.test(dotted) ? dotted : null;
}

/** Why an anchor option would not plan, in words; null for a time. */
export function anchorNote(look: TimeLook): string | null {
  if (look.kind === "no_zone") return "has no time zone: it would be skipped (no anchor)";
  if (look.kind === "seconds") return "looks like epoch seconds; an anchor reads milliseconds";
  return null;
}

/** "24 h before", "30 min after", "at": the offset in words, for the card's summary; null when it does not parse. */
export function offsetWords(at: string): string | null {
  const m = /^([+-])?((?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+)$/.exec(at.trim());
  if (!m) return at.trim() === "0" ? "at" : null;
  const names: Record<string, string> = { ms: "ms", s: "s", m: "min", h: "h", d: "d", w: "w" };
  const parts = [...m[2]!.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)];
  if (parts.every((p) => Number(p[1]) === 0)) return "at";
  const amount = parts.map((p) => `${p[1]} ${names[p[2]!]}`).join(" ");
  return `${amount} ${m[1] === "-" ? "before" : "after"}`;
}

// ---- labels, one place for the forms and the problems' words -------------------------------------

/** The Timing control's fields as labelled on the card, by the key under `timing`. */
export const TIMING_LABELS: Record<string, string> = {
  at: "Offset",
  anchor: "From",
  lateness: "Lateness",
  guard_anchor: "Skip if the anchor time changed",
};

/** The applet's timed settings as labelled in their section, by `part` and `part.field` under `timed`. */
export const TIMED_LABELS: Record<string, string> = {
  subject: "Subject",
  "subject.id": "Subject id",
  "subject.version": "Subject version",
  "subject.type": "Subject type",
  supersede: "Supersede",
  "supersede.path": "Event type path",
  "supersede.values": "Values that replace the plan",
  "supersede.cancel_values": "Values that cancel the plan",
  contact: "Contact",
  "contact.id": "Contact id",
  "contact.timezone": "Contact time zone",
  quiet_hours: "Quiet hours",
  "quiet_hours.start": "Quiet hours start",
  "quiet_hours.end": "Quiet hours end",
  "quiet_hours.mode": "Quiet hours mode",
  "quiet_hours.timezone": "Quiet hours time zone",
  frequency_cap: "Frequency cap",
  "frequency_cap.max": "Frequency cap: at most",
  "frequency_cap.per": "Frequency cap: per",
  conditions: "Conditions",
};

/** "Condition 2 › Field" for `conditions.all.1.field` (counted over both groups, as the rows show). */
export function conditionLabel(rows: ConditionDraft[], key: string): string | null {
  const m = /^conditions\.(all|any)\.(\d+)(?:\.(field|op|value))?/.exec(key);
  if (!m) return null;
  let seen = -1;
  const row = rows.findIndex((r) => r.group === m[1] && ++seen === Number(m[2]));
  const field = m[3] === "field" ? " › Field" : m[3] === "op" ? " › Test" : m[3] === "value" ? " › Value" : "";
  return `Condition ${row >= 0 ? row + 1 : Number(m[2]) + 1}${field}`;
}
