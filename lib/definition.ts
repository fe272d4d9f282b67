import { isValidTimeZone } from "@whenthen/schedules";
import { z } from "zod";
import { actionRegistry } from "./actions";
import { triggerRegistry } from "./triggers";
import { inUserWords } from "./core/zod-words";
import { timingSchema, timedSchema, timedRuleProblems, type Timed, type Timing } from "./timed/schema";

/**
 * The applet definition: the whole applet as one JSON document (export/import files), composed
 * from the trigger and action registries. Unknown keys are refused everywhere.
 */
const triggerSchema = unionByType([...triggerRegistry.values()]);
// An action may carry a timing (issue 17): it then runs at an offset from an anchor instead of at once.
const actionSchema = unionByType([...actionRegistry.values()], { timing: timingSchema.optional() });

function unionByType(plugins: { type: string; configSchema: z.ZodType }[], extra: z.ZodRawShape = {}) {
  const options = plugins.map((p) => z.strictObject({ type: z.literal(p.type), config: p.configSchema, ...extra }));
  const known = plugins.map((p) => p.type).join(", ");
  const base = options.length >= 2
    ? z.discriminatedUnion("type", options as unknown as [z.ZodObject, z.ZodObject, ...z.ZodObject[]], {
        error: (iss) => (iss.code === "invalid_union" ? `unknown type; expected one of: ${known}` : undefined),
      })
    : (options[0] ?? z.never());
  return base;
}

export const definitionSchema = z.strictObject({
  version: z.literal(1),
  trigger: triggerSchema,
  filter: z.strictObject({ code: z.string().max(20_000) }).optional(),
  transform: z
    .strictObject({
      model: z.string().min(1).max(200),
      prompt: z.string().min(1).max(20_000),
      output: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an identifier").default("output"),
      json: z.boolean().default(false),
    })
    .optional(),
  actions: z.array(actionSchema).min(1, "an applet needs at least one action").max(20),
  retry: z.strictObject({ max_attempts: z.number().int().min(1).max(10).default(5) }).optional(),
  /** IANA zone for the `date` filter and `now_local` (default: the schedule's zone, else UTC). */
  timezone: z
    .string()
    .refine(isValidTimeZone, "unknown IANA time zone")
    .optional(),
  /** Timed actions' applet-wide settings: the record events are about, supersede, quiet hours, cap. */
  timed: timedSchema.optional(),
});

export interface Definition {
  version: 1;
  trigger: { type: string; config: Record<string, unknown> };
  filter?: { code: string };
  transform?: { model: string; prompt: string; output: string; json: boolean };
  actions: { type: string; config: Record<string, unknown>; timing?: Timing }[];
  retry?: { max_attempts: number };
  timezone?: string;
  timed?: Timed;
}

export type { Timed, Timing };

export interface Problem {
  path: string;
  message: string;
}


/** Every problem at once, each with its path (`actions.0.config.url`). */
export function checkDefinition(input: unknown): { ok: true; definition: Definition } | { ok: false; problems: Problem[] } {
  const parsed = definitionSchema.safeParse(input, { error: inUserWords });
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.map(issueToProblem) };
  const definition = parsed.data as Definition;
  // The timing as @vibedout/automations reads it (parseRule): anything it refuses, named by its field here.
  const problems = timedRuleProblems(definition);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, definition };
}

function issueToProblem(issue: z.core.$ZodIssue): Problem {
  const path = issue.path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    return { path, message: `unknown key${issue.keys.length > 1 ? "s" : ""}: ${issue.keys.join(", ")}` };
  }
  return { path, message: issue.message };
}

export const maxAttemptsOf = (d: Definition): number => d.retry?.max_attempts ?? 5;

export function timezoneOf(d: Definition): string {
  if (d.timezone) return d.timezone;
  const tz = d.trigger.config.timezone;
  return typeof tz === "string" && isValidTimeZone(tz) ? tz : "UTC";
}
