import { CONTROL_KINDS, LIMITS, childLists, isControlStep, type Problem, type Step, type WaitStep } from "./types";

/**
 * The checks of a step list that zod cannot make one step at a time (ids unique, how many steps,
 * how deep, where a timing may sit, AI output names unique, approval buttons before their wait),
 * and the ids given to steps written without one. The structure checks walk the raw input, so
 * they are reported together with zod's problems (lib/definition/steps.ts): every problem at once.
 */

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
