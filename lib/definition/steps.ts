import { CONDITION_OPS, parseDuration, patternProblem } from "@vibedout/automations";
import { z } from "zod";
import type { ActionPlugin } from "../actions/types";
import { timingSchema } from "../timed/schema";
import { waitSignatureSchema } from "../webhooks/signature";
import { CONTROL_KINDS, LIMITS, STEP_ID, WAIT_KINDS, type WaitStep } from "./types";

/**
 * The zod schema of version 2's step list: conditions, waits, control steps and the registry's
 * actions. The checks zod cannot make one step at a time are lib/definition/structure.ts.
 */

/** The condition operators a step condition may use: the library's evaluator's own list. */
export const STEP_CONDITION_OPS: readonly string[] = CONDITION_OPS;

/** Operators that read no value (`exists` may say `false`). */
const NODE_KEYS = new Set(["field", "op", "value", "ignore_case", "all", "any"]);
const VALUELESS = new Set(["exists", "is_empty"]);
const LIST_VALUED = new Set(["in", "not_in"]);

/** What a step condition (and a for_each's list) may read: the run's ingredients. */
export const CONDITION_ROOTS = ["trigger", "ai", "vars", "steps", "item", "index", "event", "applet", "run"] as const;
const FIELD = new RegExp(`^(${CONDITION_ROOTS.join("|")})(\\.[A-Za-z0-9_$-]+)*$`);

/** A pattern check for `matches` (a bounded regex); null when the pattern is fine. */
export type PatternCheck = (pattern: string) => string | null;

// RE2 semantics (linear time): a pattern that could backtrack without bound is refused on save.
const DEFAULT_PATTERN_CHECK: PatternCheck = (pattern) => {
  const problem = patternProblem(pattern);
  return problem ? `is not a pattern that can be used: ${problem}` : null;
};

export function conditionsSchema(patternProblem: PatternCheck = DEFAULT_PATTERN_CHECK) {
  // One object shape for a condition and a group, told apart by their keys, so a problem deep in
  // a group is named at its own path (a union would say only that nothing matched).
  type Node = { field?: string; op?: string; value?: unknown; ignore_case?: boolean; all?: Node[]; any?: Node[] };
  const list: z.ZodType<Node[]> = z.lazy(() => z.array(node).min(1, "must have at least one condition").max(20, "at most 20 conditions in one group"));
  const node: z.ZodType<Node> = z
    .looseObject({
      field: z.string().regex(FIELD, `must be an ingredient path that starts with ${CONDITION_ROOTS.join(", ")}, such as "trigger.body.amount"`).optional(),
      op: z.enum(STEP_CONDITION_OPS as unknown as [string, ...string[]], { error: () => `must be one of ${STEP_CONDITION_OPS.join(", ")}` }).optional(),
      value: z.json().optional(),
      ignore_case: z.boolean().optional(),
      all: list.optional(),
      any: list.optional(),
    })
    .superRefine((c, ctx) => {
      const unknown = Object.keys(c).filter((k) => !NODE_KEYS.has(k));
      const groups = (c.all ? 1 : 0) + (c.any ? 1 : 0);
      if (groups === 0 && c.field === undefined && c.op === undefined && c.value === undefined) {
        const extra = unknown.length ? `; unknown key${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}` : "";
        return ctx.addIssue({ code: "custom", path: [], message: `must be a condition { "field", "op", "value" } or a group { "all": [...] } / { "any": [...] }${extra}` });
      }
      if (unknown.length) ctx.addIssue({ code: "custom", path: [], message: `unknown key${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}` });
      if (groups > 0) {
        if (groups > 1 || c.field !== undefined || c.op !== undefined || c.value !== undefined) ctx.addIssue({ code: "custom", path: [], message: 'a group is { "all": [conditions] } or { "any": [conditions] } and nothing else' });
        return;
      }
      if (c.field === undefined) ctx.addIssue({ code: "custom", path: ["field"], message: "is required" });
      if (c.op === undefined) return ctx.addIssue({ code: "custom", path: ["op"], message: "is required" });
      if (c.op === "exists" && c.value !== undefined && typeof c.value !== "boolean") ctx.addIssue({ code: "custom", path: ["value"], message: "must be true or false for exists (or left out)" });
      else if (c.op === "is_empty" && c.value !== undefined) ctx.addIssue({ code: "custom", path: ["value"], message: "is not read by is_empty; leave it out" });
      else if (!VALUELESS.has(c.op) && c.value === undefined) ctx.addIssue({ code: "custom", path: ["value"], message: `is required for ${c.op}` });
      else if (LIST_VALUED.has(c.op) && !Array.isArray(c.value)) ctx.addIssue({ code: "custom", path: ["value"], message: `must be a list for ${c.op}` });
      else if (c.op === "matches") {
        if (typeof c.value !== "string") ctx.addIssue({ code: "custom", path: ["value"], message: "must be a pattern (text) for matches" });
        else {
          const problem = patternProblem(c.value);
          if (problem) ctx.addIssue({ code: "custom", path: ["value"], message: problem });
        }
      }
    });
  // The top of a condition is always a group.
  return node.superRefine((c, ctx) => {
    if (!c.all && !c.any && (c.field !== undefined || c.op !== undefined)) ctx.addIssue({ code: "custom", path: [], message: 'must be a group: { "all": [conditions] } or { "any": [conditions] } (one condition goes in "all")' });
  }) as unknown as z.ZodType<{ all: Node[] } | { any: Node[] }>;
}

const WAIT_MAX_MS = LIMITS.waitDays * 24 * 60 * 60_000;

/** A wait's duration ("2h", "3d", "1h30m") in milliseconds: more than zero, at most LIMITS.waitDays. null when it does not parse. */
export function waitDurationMs(text: string): number | null {
  const ms = parseDuration(text.trim());
  return ms === null || !Number.isFinite(ms) ? null : ms;
}

const waitDuration = z.string().superRefine((v, ctx) => {
  const ms = waitDurationMs(v);
  if (ms === null || ms <= 0) ctx.addIssue({ code: "custom", message: `must be a duration such as "30s", "2h", "3d" or "1h30m"; got ${JSON.stringify(v)}` });
  else if (ms > WAIT_MAX_MS) ctx.addIssue({ code: "custom", message: `a wait lasts at most ${LIMITS.waitDays} days; ${JSON.stringify(v)} is longer` });
});

/** A time as `until` and the wait's clock read it: ISO with a zone (Z or an offset), or epoch milliseconds. */
export const ZONED_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;
const UNZONED_TIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$/;

/** Why a rendered `until` is not a time (null when it is one): names what was rendered. */
export function untilProblem(rendered: string): string | null {
  const t = rendered.trim();
  if (t === "") return "the time rendered empty";
  if (UNZONED_TIME.test(t)) return `${JSON.stringify(t)} is a time without a zone (add Z or an offset such as +01:00)`;
  if (/^\d{10,16}$/.test(t)) return null;
  if (!ZONED_TIME.test(t) || Number.isNaN(Date.parse(t.replace(" ", "T")))) return `${JSON.stringify(t)} is not a time (expected ISO 8601 with a zone, such as 2026-03-07T16:00:00+01:00, or epoch milliseconds)`;
  return null;
}

/** The instant of a rendered `until` that `untilProblem` accepted. */
export function untilMs(rendered: string): number {
  const t = rendered.trim();
  return /^\d{10,16}$/.test(t) ? Number(t) : Date.parse(t.replace(" ", "T"));
}

/** Which of a wait step's fields each kind reads; any other is refused by name. */
const WAIT_FIELDS: Record<WaitStep["kind"], string[]> = {
  delay: ["duration"],
  until: ["at", "if_past"],
  for_call: ["signature"],
  for_approval: ["message", "on_deny"],
};
const KIND_FIELDS = ["duration", "at", "if_past", "message", "on_deny", "signature"];

const stepId = z.string().regex(STEP_ID, "must be 1-64 letters, digits or _, not starting with a digit");
const identifier = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an identifier");

/** The step-list schema, built from the action registry (an action step's `type` is its plug-in). */
export function stepsSchema(actions: readonly Pick<ActionPlugin, "type" | "configSchema">[], patternProblem?: PatternCheck) {
  const conditions = conditionsSchema(patternProblem);
  const list: z.ZodType<unknown[]> = z.lazy(() => z.array(step));
  const nonEmpty = (what: string): z.ZodType<unknown[]> => z.lazy(() => z.array(step).min(1, `${what} needs at least one step`));

  const actionOptions = actions.map((p) =>
    z.strictObject({
      id: stepId.optional(),
      type: z.literal(p.type),
      config: p.configSchema,
      when: conditions.optional(),
      continue_on_error: z.boolean().optional(),
      timing: timingSchema.optional(),
    }),
  );
  const control = [
    z.strictObject({ id: stepId.optional(), type: z.literal("filter"), code: z.string().max(20_000) }),
    z.strictObject({
      id: stepId.optional(),
      type: z.literal("ai"),
      model: z.string().min(1).max(200),
      prompt: z.string().min(1).max(20_000),
      output: identifier.default("output"),
      json: z.boolean().default(false),
    }),
    z.strictObject({ id: stepId.optional(), type: z.literal("if"), conditions, then: nonEmpty("then"), else: list.optional() }),
    z.strictObject({
      id: stepId.optional(),
      type: z.literal("paths"),
      mode: z.enum(["first", "all"]).default("first"),
      paths: z
        .array(z.strictObject({ name: z.string().min(1).max(100), conditions, steps: nonEmpty("a path") }))
        .min(1, "must have at least one path")
        .max(20, "at most 20 paths"),
      otherwise: list.optional(),
    }),
    z.strictObject({
      id: stepId.optional(),
      type: z.literal("for_each"),
      items: z.string().min(1).max(500),
      max_items: z
        .number()
        .int()
        .min(1)
        .max(LIMITS.forEachMax, `a for each runs at most ${LIMITS.forEachMax} items`)
        .optional(),
      continue_on_error: z.boolean().optional(),
      steps: nonEmpty("a for each"),
    }),
    z
      .strictObject({
        id: stepId.optional(),
        type: z.literal("wait"),
        kind: z.enum(WAIT_KINDS, { error: () => `must be one of ${WAIT_KINDS.join(", ")}` }),
        duration: waitDuration.optional(),
        at: z.string().min(1, "must not be empty").max(500).optional(),
        if_past: z.enum(["continue", "skip_rest"]).optional(),
        message: z.string().max(5000).optional(),
        timeout: waitDuration.optional(),
        on_timeout: nonEmpty("on_timeout").optional(),
        on_deny: nonEmpty("on_deny").optional(),
        // The webhook trigger's check, for the call to {{run.resume_url}} (lib/webhooks/signature.ts).
        signature: waitSignatureSchema.optional(),
      })
      .superRefine((w, ctx) => {
        const reads = WAIT_FIELDS[w.kind] ?? [];
        for (const f of KIND_FIELDS) {
          if ((w as Record<string, unknown>)[f] !== undefined && !reads.includes(f)) ctx.addIssue({ code: "custom", path: [f], message: `is not read by a ${w.kind} wait; leave it out` });
        }
        if (w.kind === "delay" && w.duration === undefined) ctx.addIssue({ code: "custom", path: ["duration"], message: 'is required for a delay, such as "2h" or "3d"' });
        if (w.kind === "until") {
          if (w.at === undefined) ctx.addIssue({ code: "custom", path: ["at"], message: "is required for until: a time with its zone, or a template that renders one, such as {{trigger.body.starts_at}}" });
          // A literal time is checked now; a template's is checked when it renders.
          else if (!w.at.includes("{{")) {
            const problem = untilProblem(w.at);
            if (problem) ctx.addIssue({ code: "custom", path: ["at"], message: problem });
          }
        }
        if (w.on_timeout !== undefined && w.timeout === undefined) ctx.addIssue({ code: "custom", path: ["on_timeout"], message: "runs when the wait times out: give the wait a timeout too" });
      }),
    z.strictObject({ id: stepId.optional(), type: z.literal("stop"), status: z.enum(["succeeded", "skipped"]).default("skipped"), reason: z.string().max(1000).optional() }),
  ];
  const known = [...actions.map((p) => p.type), ...CONTROL_KINDS].join(", ");
  const options = [...actionOptions, ...control];
  const step: z.ZodType = z.discriminatedUnion("type", options as unknown as [z.ZodObject, z.ZodObject, ...z.ZodObject[]], {
    error: (iss) => (iss.code === "invalid_union" ? `unknown step type; expected one of: ${known}` : undefined),
  });
  return z.array(step).min(1, "an applet needs at least one step");
}
