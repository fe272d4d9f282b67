import { describe, expect, test } from "vitest";
import { buildDefinition, draftFromDefinition, draftReducer, type Catalog, type Draft, type DraftAction } from "@/components/editor/draft";
import { placeProblems } from "@/components/editor/save-problems";
import { wordProblem } from "@/components/editor/problems";
import { moveStep, removeStep, stepAt, stepPaths, stepsFromDef, stepsToDef, type StepDraft } from "@/components/editor/steps/tree";
import { actionRegistry } from "@/lib/actions";
import { checkDefinition, type Definition } from "@/lib/definition";
import { previewWalk } from "@/lib/executor/preview-walk";
import { renderConfig } from "@/lib/template";
import { triggerRegistry } from "@/lib/triggers";

/**
 * The step editor's tree without a browser: any version 2 step list (nested three deep) round
 * trips through the editor unchanged, steps move within their list, a save's problems land on the
 * step their path names, and the preview walk takes the way the executor's evaluator decides.
 */
const catalog: Catalog = {
  triggers: [...triggerRegistry.values()].map((t) => ({ type: t.type, label: t.label, description: t.description, fields: t.fields, ingredients: t.ingredients, sample: t.sample, can_fetch: Boolean(t.preview), fetch_label: t.previewLabel ?? "Fetch now" })),
  actions: [...actionRegistry.values()].map((a) => ({ type: a.type, label: a.label, description: a.description, fields: a.fields, available: true })),
};
const slack = (text: string) => ({ type: "slack", config: { webhook_url: "https://hooks.slack.com/services/T/B/X", text } });

const nested: Definition = {
  version: 2,
  trigger: { type: "webhook", config: {} },
  steps: [
    {
      id: "route",
      type: "paths",
      mode: "first",
      paths: [
        {
          name: "large",
          conditions: { all: [{ field: "trigger.body.amount", op: "gt", value: 100 }, { any: [{ field: "trigger.body.currency", op: "in", value: ["EUR", "USD"] }, { field: "trigger.body.vip", op: "exists" }] }] },
          steps: [
            {
              id: "each",
              type: "for_each",
              items: "{{trigger.body.items}}",
              max_items: 10,
              steps: [{ id: "check", type: "if", conditions: { all: [{ field: "item.qty", op: "gte", value: 2 }] }, then: [{ id: "post", ...slack("{{item.sku}} x{{item.qty}}") }], else: [{ id: "halt", type: "stop", status: "skipped", reason: "small item {{index}}" }] }],
            },
          ],
        },
      ],
      otherwise: [{ id: "mail", type: "email", config: { to: "me@example.com", subject: "small {{trigger.body.amount}}" }, when: { all: [{ field: "trigger.body.amount", op: "exists" }] }, continue_on_error: true }],
    },
  ],
};

describe("the step tree", () => {
  test("a step list nested three deep opens as steps and saves unchanged", () => {
    expect(checkDefinition(nested).ok).toBe(true);
    const draft = draftFromDefinition(catalog, { name: "x", definition: nested });
    expect(draft.steps).not.toBeNull();
    expect(buildDefinition(catalog, draft)).toEqual(nested);
  });

  test("a step list with a linear form opens as the simple applet", () => {
    const linear: Definition = { version: 2, trigger: { type: "webhook", config: {} }, steps: [{ id: "action_1", ...slack("hi") }] };
    const draft = draftFromDefinition(catalog, { name: "x", definition: linear });
    expect(draft.steps).toBeNull();
    expect(draft.actions.map((a) => a.type)).toEqual(["slack"]);
  });

  test("steps move within their own list, and stay at its ends", () => {
    let key = 0;
    const steps: StepDraft[] = stepsFromDef(catalog, [{ id: "a", ...slack("a") }, { id: "b", ...slack("b") }, { id: "c", type: "stop", status: "skipped" }], () => key++);
    const ids = (s: StepDraft[]) => s.map((x) => x.id);
    expect(ids(moveStep(steps, steps[2]!.key, -1))).toEqual(["a", "c", "b"]);
    expect(ids(moveStep(steps, steps[0]!.key, -1))).toEqual(["a", "b", "c"]);
    expect(ids(removeStep(steps, steps[1]!.key))).toEqual(["a", "c"]);
  });

  test("a save's problem lands on the step its path names, an action's field on that field", () => {
    const draft = draftFromDefinition(catalog, { name: "x", definition: nested });
    const placed = placeProblems(draft, [
      { path: "definition.steps.0.paths.0.steps.0.steps.0.then.0.config.webhook_url", message: "must be a URL" },
      { path: "definition.steps.0.paths.0.steps.0.max_items", message: "a for each runs at most 1000 items" },
    ]);
    const paths = stepPaths(catalog, draft.steps!);
    const post = stepAt(draft.steps!, paths, "steps.0.paths.0.steps.0.steps.0.then.0")!.step;
    const each = stepAt(draft.steps!, paths, "steps.0.paths.0.steps.0")!.step;
    expect(post.kind === "action" && placed.slots.get(post.slot.key)?.fields.get("webhook_url")).toEqual(["must be a URL"]);
    expect(placed.steps.get(each.key)).toEqual(["max_items: a for each runs at most 1000 items"]);
    expect(wordProblem(catalog, draft, { path: "definition.steps.0.paths.0.steps.0.steps.0.then.0.config.webhook_url", message: "must be a URL" }).where).toBe("Step post (Slack message) › Webhook URL");
  });

  test("an action still being picked is not written, and the paths count only written steps", () => {
    let d: Draft = draftFromDefinition(catalog, { name: "x", definition: nested });
    const apply = (...a: DraftAction[]) => (d = a.reduce(draftReducer, d));
    apply({ kind: "addStep", step: "action", where: { parent: null, list: "steps" } }, { kind: "addStep", step: "stop", where: { parent: null, list: "steps" } });
    const { steps, paths } = stepsToDef(catalog, d.steps!);
    expect(steps.map((s) => s.id)).toEqual(["route", "stop_1"]);
    expect(paths.get(d.steps![2]!.key)).toBe("steps.1");
  });
});

describe("the preview walk", () => {
  const walk = (body: Record<string, unknown>) =>
    previewWalk(nested, { trigger: { body } }, (step, ctx) => ({ rendered: renderConfig(step.config, ctx, { timezone: "UTC" }).rendered, unresolved: [] }), "UTC");

  test("a large order takes path large and renders each item's action", () => {
    const out = walk({ amount: 150, currency: "EUR", items: [{ sku: "A", qty: 3 }, { sku: "B", qty: 5 }] });
    expect(out[0]).toMatchObject({ id: "route", decision: "large", taken: ["large"] });
    expect(out[0]!.why).toContain("150 > 100");
    expect(out.filter((e) => e.id === "post").map((e) => [e.iteration, (e.rendered as { text: string }).text])).toEqual([
      [[0], "A x3"],
      [[1], "B x5"],
    ]);
  });

  test("a small order takes otherwise; a stop inside a for each ends the walk", () => {
    expect(walk({ amount: 20 }).map((e) => [e.id, e.decision ?? e.status])).toEqual([
      ["route", "otherwise"],
      ["mail", "run"],
    ]);
    const stopped = walk({ amount: 150, currency: "USD", items: [{ sku: "A", qty: 1 }, { sku: "B", qty: 5 }] });
    expect(stopped.map((e) => [e.id, e.status])).toEqual([
      ["route", "run"],
      ["each", "run"],
      ["check", "run"],
      ["halt", "stop"],
    ]);
    expect(stopped.at(-1)!.why).toBe("the run ends skipped: small item 0");
  });

  test("a for each over something that is not a list says what it found", () => {
    const out = walk({ amount: 150, currency: "EUR", items: { sku: "A" } });
    expect(out.at(-1)).toMatchObject({ id: "each", status: "failed" });
    expect(out.at(-1)!.why).toContain("expected a list at trigger.body.items");
  });
});
