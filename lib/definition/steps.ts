import { CONDITION_OPS, parseDuration, patternProblem } from "@vibedout/automations";
import { z } from "zod";
import type { ActionPlugin } from "../actions/types";
import { timingSchema } from "../timed/schema";
import { waitSignatureSchema } from "../webhooks/signature";
import { CONTROL_KINDS, LIMITS, STEP_ID, WAIT_KINDS, childLists, isControlStep, type Problem, type Step, type WaitStep } from "./types";

/**
 * The zod schema of version 2's step list, and the checks zod cannot make one step at a time
 * (ids unique, how many steps, how deep, where a timing may sit, AI output names unique). Those
 * walk the raw input, so they are reported together with zod's problems: every problem at once.
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

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === "object" && v !== null && !Array.isArray(v);
const CONTAINER_LABEL: Record<string, string> = { if: "an if step", paths: "a paths step", for_each: "a for each step", wait: "a wait step" };

/** The lists nested in a raw step, as childLists says them for a checked one. */
function rawChildren(step: Raw): { path: string; steps: unknown[] }[] {
  const out: { path: string; steps: unknown[] }[] = [];
  const add = (path: string, v: unknown) => {
    if (Array.isArray(v)) out.push({ path, steps: v });
  };
  if (step.type === "if") {
    add("then", step.then);
    add("else", step.else);
  } else if (step.type === "paths") {
    if (Array.isArray(step.paths)) step.paths.forEach((p, i) => isObject(p) && add(`paths.${i}.steps`, p.steps));
    add("otherwise", step.otherwise);
  } else if (step.type === "for_each") add("steps", step.steps);
  else if (step.type === "wait") {
    add("on_timeout", step.on_timeout);
    add("on_deny", step.on_deny);
  }
  return out;
}

/**
 * What the step list breaks that no single step shows: too many steps, nested too deep, a
 * duplicate id, a timing anywhere but on a top-level action, an AI output name used twice.
 */
export function structureProblems(steps: unknown): Problem[] {
  if (!Array.isArray(steps)) return [];
  const problems: Problem[] = [];
  const ids = new Map<string, string>();
  const outputs = new Map<string, string>();
  let count = 0;
  const visit = (list: unknown[], base: string, depth: number, inside: string | null) => {
    for (const [i, raw] of list.entries()) {
      const path = `${base}.${i}`;
      if (!isObject(raw)) continue;
      count++;
      if (depth > LIMITS.depth) {
        problems.push({ path, message: `steps can be nested at most ${LIMITS.depth} deep; this one is ${depth} deep` });
        continue;
      }
      if (typeof raw.id === "string") {
        const first = ids.get(raw.id);
        if (first) problems.push({ path: `${path}.id`, message: `the id "${raw.id}" is already used by ${first}` });
        else ids.set(raw.id, path);
      }
      const isControl = (CONTROL_KINDS as readonly unknown[]).includes(raw.type);
      if (raw.timing !== undefined) {
        if (isControl) problems.push({ path: `${path}.timing`, message: "only actions can carry a timing (and only top-level ones)" });
        else if (inside) problems.push({ path: `${path}.timing`, message: `only top-level actions can carry a timing; this action is inside ${inside}` });
      }
      if (raw.type === "ai") {
        const output = typeof raw.output === "string" ? raw.output : "output";
        const first = outputs.get(output);
        if (first) problems.push({ path: `${path}.output`, message: `the AI output name "${output}" is already used by ${first}; each AI step needs its own` });
        else outputs.set(output, path);
      }
      for (const child of rawChildren(raw)) visit(child.steps, `${path}.${child.path}`, depth + 1, inside ?? CONTAINER_LABEL[raw.type as string] ?? null);
    }
  };
  visit(steps, "steps", 0, null);
  if (count > LIMITS.steps) problems.unshift({ path: "steps", message: `an applet can have at most ${LIMITS.steps} steps; this one has ${count}` });
  return problems;
}

/**
 * Gives every step without an id a stable one, `<type>_<n>` (n counting that type's steps in
 * written order, skipping ids already taken), so the same input always gets the same ids.
 */
export function assignIds(steps: Step[]): Step[] {
  const taken = new Set<string>();
  const collect = (list: Step[]) => {
    for (const s of list) {
      if (s.id) taken.add(s.id);
      for (const c of childrenOf(s)) collect(c);
    }
  };
  collect(steps);
  const next = new Map<string, number>();
  const fresh = (type: string): string => {
    let n = next.get(type) ?? 1;
    while (taken.has(`${type}_${n}`)) n++;
    next.set(type, n + 1);
    taken.add(`${type}_${n}`);
    return `${type}_${n}`;
  };
  const give = (list: Step[]): Step[] =>
    list.map((s) => {
      const { id, ...rest } = s;
      return withChildren({ id: id || fresh(s.type), ...rest }, give);
    });
  return give(steps);
}

function childrenOf(s: Step): Step[][] {
  switch (s.type) {
    case "if":
      return [(s as Extract<Step, { type: "if" }>).then, (s as Extract<Step, { type: "if" }>).else ?? []];
    case "paths": {
      const p = s as Extract<Step, { type: "paths" }>;
      return [...p.paths.map((x) => x.steps), p.otherwise ?? []];
    }
    case "for_each":
      return [(s as Extract<Step, { type: "for_each" }>).steps];
    case "wait": {
      const w = s as WaitStep;
      return [w.on_timeout ?? [], (w.kind === "for_approval" ? w.on_deny : undefined) ?? []];
    }
    default:
      return [];
  }
}

function withChildren(s: Step, f: (list: Step[]) => Step[]): Step {
  switch (s.type) {
    case "if": {
      const x = s as Extract<Step, { type: "if" }>;
      return { ...x, then: f(x.then), ...(x.else ? { else: f(x.else) } : {}) };
    }
    case "paths": {
      const x = s as Extract<Step, { type: "paths" }>;
      return { ...x, paths: x.paths.map((p) => ({ ...p, steps: f(p.steps) })), ...(x.otherwise ? { otherwise: f(x.otherwise) } : {}) };
    }
    case "for_each": {
      const x = s as Extract<Step, { type: "for_each" }>;
      return { ...x, steps: f(x.steps) };
    }
    case "wait": {
      const x = s as WaitStep & { on_deny?: Step[] };
      return { ...x, ...(x.on_timeout ? { on_timeout: f(x.on_timeout) } : {}), ...(x.on_deny ? { on_deny: f(x.on_deny) } : {}) };
    }
    default:
      return s;
  }
}

/** Whether an action step asks for approval buttons (push: only ntfy has them; Pushover's copy of the field is ignored, as its other ntfy fields are). */
function wantsApprovalButtons(step: Step): boolean {
  if (isControlStep(step)) return false;
  const config = (step as { config?: Record<string, unknown> }).config ?? {};
  if (config.approval_buttons !== true) return false;
  return step.type !== "push" || config.provider === "ntfy";
}

/**
 * An action's `approval_buttons` open the approval page of the wait the run reaches next, so a
 * for_approval wait must come after the step. Looking forward in the order steps run: the rest of
 * its list (nested steps of those included, as a branch may hold the wait), then the rest of each
 * enclosing list (an on_timeout or on_deny list ends the run: nothing after its wait follows). A
 * wait of another kind that certainly comes first (not inside a branch) would take the links.
 */
export function approvalButtonProblems(steps: Step[]): Problem[] {
  const problems: Problem[] = [];
  type Frame = { list: Step[]; index: number; ends: boolean };
  const visit = (list: Step[], base: string, chain: Frame[]) => {
    list.forEach((step, i) => {
      const path = `${base}.${i}`;
      if (wantsApprovalButtons(step)) {
        const verdict = nextWait([...chain, { list, index: i, ends: false }]);
        if (verdict.kind === "none") {
          problems.push({ path: `${path}.config.approval_buttons`, message: "needs a for_approval wait after this step: the Approve and Deny buttons open that wait's approval page. Add the wait, or turn the buttons off" });
        } else if (verdict.kind === "other") {
          problems.push({ path: `${path}.config.approval_buttons`, message: `the next wait after this step is ${verdict.path} (a ${verdict.waitKind} wait), so the buttons would open its links; put a for_approval wait before it, or turn the buttons off` });
        }
      }
      for (const child of childLists(step)) {
        const ends = step.type === "wait";
        visit(child.steps, `${path}.${child.path}`, [...chain, { list, index: i, ends }]);
      }
    });
  };
  // Paths of the steps in each frame's list, for naming the wait in the way.
  const pathOf = new Map<Step, string>();
  for (const { step, path } of walkDefinitionSteps(steps)) pathOf.set(step, path);

  function nextWait(chain: Frame[]): { kind: "approval" } | { kind: "none" } | { kind: "other"; path: string; waitKind: string } {
    // Innermost first: the rest of the step's own list, then outwards.
    for (let level = chain.length - 1; level >= 0; level--) {
      const frame = chain[level]!;
      for (const later of frame.list.slice(frame.index + 1)) {
        if (later.type === "wait") {
          const w = later as WaitStep;
          if (w.kind === "for_approval") return { kind: "approval" };
          return { kind: "other", path: pathOf.get(later) ?? later.id ?? "a wait", waitKind: w.kind };
        }
        // Inside a branch or a loop: a for_approval there may be the one (other waits there may not run).
        for (const child of childLists(later)) if (hasApprovalWait(child.steps)) return { kind: "approval" };
      }
      // Below a wait (its on_timeout or on_deny), the run ends after the list.
      if (level > 0 && chain[level - 1]!.ends) return { kind: "none" };
    }
    return { kind: "none" };
  }
  visit(steps, "steps", []);
  return problems;
}

function hasApprovalWait(steps: Step[]): boolean {
  for (const { step } of walkDefinitionSteps(steps)) if (step.type === "wait" && (step as WaitStep).kind === "for_approval") return true;
  return false;
}

function* walkDefinitionSteps(steps: Step[], base = "steps"): Generator<{ step: Step; path: string }> {
  for (const [i, step] of steps.entries()) {
    const path = `${base}.${i}`;
    yield { step, path };
    for (const child of childLists(step)) yield* walkDefinitionSteps(child.steps, `${path}.${child.path}`);
  }
}
