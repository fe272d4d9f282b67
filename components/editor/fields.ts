import { toText } from "@/lib/core/text";
import type { FieldMeta } from "@/lib/plugin";

/**
 * Form state ⇄ stored config. The form keeps strings (text, select, json, number), booleans and
 * string lists; the stored config keeps what the plug-in's zod schema expects. Keys the form does
 * not know (a config imported from a newer version) pass through untouched.
 */
export type FormValue = string | boolean | string[];
export type FormConfig = Record<string, FormValue>;

export function visible(field: FieldMeta, cfg: FormConfig): boolean {
  if (!field.showWhen) return true;
  const v = cfg[field.showWhen.field];
  return typeof v === "string" && field.showWhen.equals.includes(v);
}

/**
 * Where the form keeps a `jsonMode` field's mode: "json" (JSON (typed): the text is parsed and
 * stored as a JSON value, whose whole-value templates keep their type) or "text" (sent as written).
 */
export const modeKey = (name: string): string => `${name}:mode`;
export type BodyMode = "json" | "text";
export const modeOf = (cfg: FormConfig, name: string): BodyMode => (cfg[modeKey(name)] === "text" ? "text" : "json");

/** Why a JSON (typed) field's text is not JSON, in the user's words; null when it is (or is empty). */
export function jsonModeProblem(text: string): string | null {
  if (text.trim() === "") return null;
  try {
    JSON.parse(text);
    return null;
  } catch (e) {
    return `Not valid JSON: ${(e as Error).message}. Write values in double quotes, e.g. {"amount": "{{trigger.body.amount}}"}, or choose Text to send it as written. Until then it is sent as the text typed.`;
  }
}

export function defaultsFor(fields: FieldMeta[]): FormConfig {
  const cfg: FormConfig = {};
  for (const f of fields) {
    if (f.jsonMode) cfg[modeKey(f.name)] = "json";
    if (f.kind === "boolean") cfg[f.name] = false;
    else if (f.kind === "list") cfg[f.name] = [""];
    // A required select has no sensible empty state (push provider): start on its first option.
    else if (f.kind === "select" && f.required && f.options?.length) cfg[f.name] = f.options[0]!.value;
    else cfg[f.name] = "";
  }
  return cfg;
}

export function toForm(fields: FieldMeta[], config: Record<string, unknown>): FormConfig {
  const cfg = defaultsFor(fields);
  for (const f of fields) {
    const v = config[f.name];
    if (v === undefined || v === null) continue;
    // Stored text stays text; a stored JSON value (an object, a number) is shown as typed JSON.
    if (f.jsonMode) cfg[modeKey(f.name)] = typeof v === "string" ? "text" : "json";
    if (f.kind === "boolean") cfg[f.name] = v === true || v === "true";
    else if (f.kind === "list") cfg[f.name] = Array.isArray(v) ? v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))) : [toText(v)];
    else if (f.kind === "json") cfg[f.name] = typeof v === "string" ? v : JSON.stringify(v, null, 2);
    // A text field holding JSON (an imported http body object, a poll target of 100) shows it as
    // JSON, and fromForm reads it back as JSON: it keeps its type instead of becoming "[object Object]".
    else cfg[f.name] = typeof v === "string" ? v : typeof v === "object" ? JSON.stringify(v, null, 2) : toText(v);
  }
  return cfg;
}

export function fromForm(fields: FieldMeta[], cfg: FormConfig, original: Record<string, unknown> = {}): Record<string, unknown> {
  const known = new Set(fields.map((f) => f.name));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(original)) if (!known.has(k)) out[k] = v;
  for (const f of fields) {
    if (!visible(f, cfg)) continue;
    const v = cfg[f.name];
    if (f.kind === "boolean") {
      // A box never ticked is not written: an applet edited elsewhere keeps its config as stored
      // (a new option such as approval_buttons does not appear in every saved action as false).
      if (v === true || original[f.name] !== undefined) out[f.name] = v === true;
      continue;
    }
    if (f.kind === "list") {
      // A row still as toForm showed a stored non-text cell (a number) keeps that cell as it was.
      const stored = Array.isArray(original[f.name]) ? (original[f.name] as unknown[]) : [];
      out[f.name] = Array.isArray(v) ? v.map((x, i) => (typeof stored[i] !== "string" && stored[i] !== undefined && JSON.stringify(stored[i]) === x ? stored[i] : x)) : [];
      continue;
    }
    const s = typeof v === "string" ? v : "";
    // An empty optional field is left out; an empty required one is sent so the schema names it.
    if (s.trim() === "") {
      if (f.required) out[f.name] = s;
      continue;
    }
    if (f.jsonMode) {
      // JSON (typed): the parsed value (a JSON string stays a string); text that is not JSON yet
      // is kept as typed, and the form says so (jsonModeProblem). Text: as written.
      out[f.name] = modeOf(cfg, f.name) === "json" ? jsonOr(s) : s;
    } else if (f.kind === "number") {
      const n = Number(s);
      out[f.name] = Number.isFinite(n) ? n : s;
    } else if (f.kind === "json") {
      try {
        out[f.name] = JSON.parse(s) as unknown;
      } catch {
        // Not JSON yet (a template such as {{vars.blocks | json}}): the schema decides.
        out[f.name] = s;
      }
    } else if (f.name in original && typeof original[f.name] !== "string") {
      out[f.name] = parsedOr(s);
    } else {
      out[f.name] = s;
    }
  }
  return out;
}

function jsonOr(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return s;
  }
}

/** The JSON value a text holds, if it holds one that is not a string; else the text itself. */
function parsedOr(s: string): unknown {
  try {
    const v = JSON.parse(s) as unknown;
    return typeof v === "string" ? s : v;
  } catch {
    return s;
  }
}

export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}
