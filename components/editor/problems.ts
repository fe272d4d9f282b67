import type { Problem } from "@/lib/definition";
import type { FieldMeta } from "@/lib/plugin";
import { actionOf, triggerOf, typedSlots, type Catalog, type Draft } from "./draft";
import { conditionLabel, TIMED_LABELS, TIMING_LABELS } from "./timing";
import { KIND_LABEL, stepAt, stepPaths } from "./steps/tree";

/**
 * A save's problems in the editor's words: where it is as the form labels it ("Action 1 (Slack) ›
 * Webhook URL", not `definition.actions.0.config.webhook_url`), and the message with the field's
 * label in place of its config key (`Webhook URL is empty`, not `slack: "webhook_url" is empty`).
 * Pure, so tests/unit/test-events-and-run-text.test.ts pins it.
 */
export interface WordedProblem extends Problem {
  /** Where the problem is, as the editor labels it. */
  where: string;
}

const SETTINGS: Record<string, string> = {
  name: "Name",
  "definition.filter": "Filter code",
  "definition.retry": "Attempts before giving up",
  "definition.timezone": "Time zone for dates in templates",
  "definition.transform": "AI transform",
};

export function wordProblem(catalog: Catalog, draft: Draft, p: Problem): WordedProblem {
  const parts = p.path.split(".");
  if (parts[0] === "definition" && parts[1] === "trigger") {
    const trigger = triggerOf(catalog, draft.trigger.type);
    const field = parts[2] === "config" ? trigger?.fields.find((f) => f.name === parts[3]) : undefined;
    const base = `Trigger (${trigger?.label ?? draft.trigger.type ?? "none"})`;
    return { ...p, where: field ? `${base} › ${field.label}` : base, message: inWords(p.message, field, trigger?.type) };
  }
  if (parts[0] === "definition" && parts[1] === "actions" && parts[2] !== undefined && /^\d+$/.test(parts[2])) {
    const index = Number(parts[2]);
    const slot = typedSlots(draft)[index];
    const action = actionOf(catalog, slot?.type);
    const field = parts[3] === "config" ? action?.fields.find((f) => f.name === parts[4]) : undefined;
    const base = `Action ${index + 1} (${action?.label ?? slot?.type ?? "?"})`;
    if (parts[3] === "timing") return { ...p, where: parts[4] ? `${base} › Timing › ${TIMING_LABELS[parts[4]] ?? parts[4]}` : `${base} › Timing` };
    return { ...p, where: field ? `${base} › ${field.label}` : base, message: inWords(p.message, field, action?.type) };
  }
  if (parts[0] === "definition" && parts[1] === "actions") return { ...p, where: "Actions" };
  if (parts[0] === "definition" && parts[1] === "steps" && draft.steps) {
    const at = stepAt(draft.steps, stepPaths(catalog, draft.steps), parts.slice(1).join("."));
    if (!at) return { ...p, where: "Steps" };
    const action = at.step.kind === "action" ? actionOf(catalog, at.step.slot.type) : undefined;
    const [sub, key] = at.rest.split(".");
    const field = sub === "config" ? action?.fields.find((f) => f.name === key) : undefined;
    const base = `Step ${at.step.id} (${action?.label ?? KIND_LABEL[at.step.kind]})`;
    return { ...p, where: field ? `${base} › ${field.label}` : at.rest ? `${base} › ${at.rest}` : base, message: inWords(p.message, field, action?.type) };
  }
  const key = parts[0] === "definition" ? `definition.${parts[1] ?? ""}` : parts[0]!;
  if (parts[1] === "transform" && parts[2]) return { ...p, where: `AI transform › ${parts[2]}` };
  if (parts[0] === "definition" && parts[1] === "timed") {
    const key = parts.slice(2, 4).join(".");
    const condition = parts[2] === "conditions" ? conditionLabel(draft.timed.conditions, parts.slice(2, 6).join(".")) : null;
    if (condition) return { ...p, where: `Timed actions › ${condition}` };
    return { ...p, where: key ? `Timed actions › ${TIMED_LABELS[key] ?? TIMED_LABELS[parts[2]!] ?? key}` : "Timed actions" };
  }
  return { ...p, where: SETTINGS[key] ?? "Applet" };
}

/**
 * `slack: "webhook_url" is empty; it is required` → `Webhook URL is empty; it is required`. A
 * message that does not name the field is kept, without the plug-in's prefix.
 */
export function inWords(message: string, field: FieldMeta | undefined, pluginType: string | undefined): string {
  let m = message;
  if (pluginType && m.startsWith(`${pluginType}: `)) m = m.slice(pluginType.length + 2);
  if (!field) return m;
  const quoted = new RegExp(`["'\`]${field.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}["'\`]`, "g");
  const named = m.replace(quoted, field.label);
  if (named !== m) return named;
  return m.charAt(0).toUpperCase() + m.slice(1);
}

/**
 * A refused "Fetch now" (its `config.<key>` problems) in one line, each field by its label:
 * `Feed URL: must be an http or https URL`.
 */
export function fetchProblemsInWords(pluginType: string, fields: FieldMeta[], problems: Problem[]): string {
  return problems
    .map((p) => {
      const key = p.path.replace(/^config\.?/, "").split(".")[0] ?? "";
      const field = fields.find((f) => f.name === key);
      const message = inWords(p.message, field, pluginType);
      if (!field || message.startsWith(field.label)) return message;
      return `${field.label}: ${p.message.startsWith(`${pluginType}: `) ? p.message.slice(pluginType.length + 2) : p.message}`;
    })
    .join("; ");
}

export const wordProblems = (catalog: Catalog, draft: Draft, problems: Problem[]): WordedProblem[] => problems.map((p) => wordProblem(catalog, draft, p));
