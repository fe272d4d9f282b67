import { isValidTimeZone } from "@whenthen/schedules";
import { z } from "zod";
import { actionRegistry } from "../actions";
import { triggerRegistry } from "../triggers";
import { inUserWords } from "../core/zod-words";
import { timedRuleProblems } from "../timed/rule";
import { timingSchema, timedSchema, type Timed, type Timing } from "../timed/schema";
import { controlsSchema } from "./controls";
import { stepsSchema } from "./steps";
import { approvalButtonProblems, assignIds, structureProblems } from "./structure";
import { fromV1, isActionStep, walkSteps, type Definition, type DefinitionV1, type IfStep, type PathsStep, type Problem, type Step, type StepConditions } from "./types";

export * from "./types";
export * from "./loose";
export { STEP_CONDITION_OPS, CONDITION_ROOTS, conditionsSchema, untilMs, untilProblem, waitDurationMs } from "./steps";
export { structureProblems, assignIds } from "./structure";
export type { Timed, Timing };

/**
 * The applet definition: the whole applet as one JSON document (export/import files), composed
 * from the trigger and action registries. Unknown keys are refused everywhere. Version 2 (a step
 * list) is what the app stores and exports; version 1 (filter, transform, actions) is still read,
 * as the equivalent step list.
 */
const triggerSchema = unionByType([...triggerRegistry.values()]);
// An action may carry a timing: it then runs at an offset from an anchor instead of at once.
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

const common = {
  trigger: triggerSchema,
  retry: z.strictObject({ max_attempts: z.number().int().min(1).max(10).default(5) }).optional(),
  /** IANA zone for the `date` filter and `now_local` (default: the schedule's zone, else UTC). */
  timezone: z
    .string()
    .refine(isValidTimeZone, "unknown IANA time zone")
    .optional(),
  /** Timed actions' applet-wide settings: the record events are about, supersede, quiet hours, cap. */
  timed: timedSchema.optional(),
  /** Controls over runs (lib/definition/controls.ts): concurrency, rate limit, debounce. */
  controls: controlsSchema.optional(),
};

/** Version 1, as earlier releases stored and exported it. */
export const definitionSchemaV1 = z.strictObject({
  version: z.literal(1),
  trigger: common.trigger,
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
  retry: common.retry,
  timezone: common.timezone,
  timed: common.timed,
  controls: common.controls,
});

/** Version 2: a trigger and a step list (lib/definition/steps.ts). */
export const definitionSchema = z.strictObject({
  version: z.literal(2),
  ...common,
  steps: stepsSchema([...actionRegistry.values()]),
});

/**
 * Every problem at once, each with its path (`steps.2.then.0.config.url`; a version 1 document's
 * problems are named by its own paths, `actions.0.config.url`). The definition comes back as
 * version 2, every step with its id.
 */
export function checkDefinition(input: unknown): { ok: true; definition: Definition } | { ok: false; problems: Problem[] } {
  const version = typeof input === "object" && input !== null ? (input as { version?: unknown }).version : undefined;
  if (version === 1) return checkV1(input);
  if (version !== 2 && typeof input === "object" && input !== null) {
    return { ok: false, problems: [{ path: "version", message: version === undefined ? "is required (2, or 1 for a file from an earlier release)" : "must be 2 (or 1 for a file from an earlier release)" }] };
  }
  const parsed = definitionSchema.safeParse(input, { error: inUserWords });
  const structure = structureProblems(typeof input === "object" && input !== null ? (input as { steps?: unknown }).steps : undefined);
  // A timing on a control step is said once, by the structure check, not also as an unknown key.
  const said = new Set(structure.map((p) => p.path));
  const zodProblems = parsed.success ? [] : parsed.error.issues.map(issueToProblem).filter((p) => !(p.message === "unknown key: timing" && said.has(`${p.path}.timing`)));
  const problems = [...structure, ...zodProblems];
  if (!parsed.success || problems.length > 0) return { ok: false, problems };
  const definition = { ...parsed.data, steps: assignIds(parsed.data.steps as Step[]) } as Definition;
  // The timing as @vibedout/automations reads it (parseRule): anything it refuses, named by its field here.
  const later = [...approvalButtonProblems(definition.steps), ...timedRuleProblems(definition)];
  return later.length > 0 ? { ok: false, problems: later } : { ok: true, definition };
}

function checkV1(input: unknown): { ok: true; definition: Definition } | { ok: false; problems: Problem[] } {
  const parsed = definitionSchemaV1.safeParse(input, { error: inUserWords });
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.map(issueToProblem) };
  const v1 = parsed.data as DefinitionV1;
  const definition = fromV1(v1);
  // Timing problems come back by step path; a version 1 document calls them actions.
  const problems = [...approvalButtonProblems(definition.steps), ...timedRuleProblems(definition)].map((p) => ({ ...p, path: pathAsWritten(input, definition, p.path) }));
  return problems.length > 0 ? { ok: false, problems } : { ok: true, definition };
}

/**
 * A stored definition (a row saved by this release or an earlier one, checked when it was saved)
 * read as version 2. Nothing is checked here: checkDefinition does that on every save.
 */
export function storedDefinition(raw: unknown): Definition {
  const d = raw as Definition | DefinitionV1;
  if (d.version === 1) return fromV1(d);
  return d.steps.every((s) => typeof s.id === "string") ? d : { ...d, steps: assignIds(d.steps) };
}

function issueToProblem(issue: z.core.$ZodIssue): Problem {
  const path = issue.path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    return { path, message: `unknown key${issue.keys.length > 1 ? "s" : ""}: ${issue.keys.join(", ")}` };
  }
  return { path, message: issue.message };
}

export const maxAttemptsOf = (d: Pick<Definition, "retry">): number => d.retry?.max_attempts ?? 5;

export function timezoneOf(d: Pick<Definition, "timezone" | "trigger">): string {
  if (d.timezone) return d.timezone;
  const tz = d.trigger.config.timezone;
  return typeof tz === "string" && isValidTimeZone(tz) ? tz : "UTC";
}

/**
 * A path into the checked definition (`steps.3.config.url`) as the document that was sent names
 * it: a version 1 document's steps are its `filter`, `transform` and `actions.N`.
 */
export function pathAsWritten(input: unknown, def: Definition, path: string): string {
  if ((input as { version?: unknown } | null)?.version !== 1) return path;
  return path.replace(/^steps\.(\d+)/, (whole, k: string) => {
    const id = def.steps[Number(k)]?.id;
    if (id === "filter") return "filter";
    if (id === "ai") return "transform";
    const n = /^action_(\d+)$/.exec(id ?? "");
    return n ? `actions.${Number(n[1]) - 1}` : whole;
  });
}

/**
 * Conditions (`when`, an if's, each path's) on a trigger field the sample does not have: said on
 * save as a warning, not refused (a field only some events carry is fine; a typo is not). At run
 * time such a field is missing, which the condition's operator decides about.
 */
export function sampleFieldWarnings(def: Definition, sample: Record<string, unknown>): Problem[] {
  const out: Problem[] = [];
  const check = (c: StepConditions, path: string) => {
    const list = "all" in c ? c.all : c.any;
    const key = "all" in c ? "all" : "any";
    list.forEach((x, i) => {
      if ("field" in x) {
        if (x.field.startsWith("trigger.") && !hasPath(sample, x.field.slice("trigger.".length).split("."))) {
          out.push({ path: `${path}.${key}.${i}.field`, message: `the trigger's sample has no ${x.field}; for an event without it the condition sees a missing value` });
        }
      } else check(x, `${path}.${key}.${i}`);
    });
  };
  for (const { step, path } of walkSteps(def.steps)) {
    if (isActionStep(step) && step.when) check(step.when, `${path}.when`);
    if (step.type === "if") check((step as IfStep).conditions, `${path}.conditions`);
    if (step.type === "paths") (step as PathsStep).paths.forEach((p, i) => check(p.conditions, `${path}.paths.${i}.conditions`));
  }
  return out;
}

function hasPath(root: unknown, keys: string[]): boolean {
  let current = root;
  for (const key of keys) {
    if (current === null || typeof current !== "object" || !Object.prototype.hasOwnProperty.call(current, key)) return false;
    current = (current as Record<string, unknown>)[key];
  }
  return current !== undefined;
}
