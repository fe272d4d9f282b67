import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { APPLET_EXAMPLES } from "@/lib/applets/examples";
import { asLinear, checkDefinition, fromV1, sampleFieldWarnings, storedDefinition, topLevelActions, type Definition, type DefinitionV1 } from "@/lib/definition";
import { credentialSpots } from "@/lib/applets/credentials";
import { pluginFields } from "@/lib/applets/credential-masks";
import { missingSecretRefs } from "@/lib/template/secret-refs";
import { changeSummary } from "@/lib/applets/versions";
import { renderWebhookResponse } from "@/lib/webhooks/respond";
import type { Run } from "@/lib/db/store";

/**
 * Definition version 2, the step list: every problem reported at once with its path, ids given,
 * the limits with the messages that name them, where a timing may sit, AI output names, patterns,
 * warnings for fields the sample lacks; and version 1 documents (the applets fixtures, the export
 * fixture, the seed's examples) read as steps and round-trip with the same behaviour.
 */
const slack = (text: string, extra: Record<string, unknown> = {}) => ({ type: "slack", config: { webhook_url: "{{secrets.SLACK_WEBHOOK}}", text }, ...extra });
const v2 = (steps: unknown[], extra: Record<string, unknown> = {}) => ({ version: 2, trigger: { type: "webhook", config: {} }, steps, ...extra });
const problemsOf = (input: unknown) => {
  const r = checkDefinition(input);
  return r.ok ? [] : r.problems;
};
const ok = (input: unknown): Definition => {
  const r = checkDefinition(input);
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.definition;
};
const amountOver = (n: number) => ({ all: [{ field: "trigger.body.amount", op: "gt", value: n }] });

describe("version 2: a step list", () => {
  test("every kind of step checks, nested three deep, and missing ids are given as <type>_<n>", () => {
    const def = ok(
      v2([
        { type: "filter", code: "set('x', 1)" },
        { type: "ai", model: "openai/gpt-4o-mini", prompt: "Summarise {{trigger.body}}", output: "summary" },
        {
          type: "paths",
          mode: "first",
          paths: [
            {
              name: "large",
              conditions: amountOver(100),
              steps: [{ type: "for_each", items: "{{trigger.body.items}}", steps: [{ type: "if", conditions: { any: [{ field: "item.sku", op: "starts_with", value: "A" }] }, then: [slack("A item {{item.sku}}")] }] }],
            },
          ],
          otherwise: [slack("small", { id: "small_note", when: { all: [{ field: "trigger.body.email", op: "exists" }] } })],
        },
        { type: "stop", status: "succeeded", reason: "done" },
        slack("after", { continue_on_error: true }),
      ]),
    );
    const ids = JSON.stringify(def.steps).match(/"id":"[^"]+"/g);
    expect(ids).toEqual(['"id":"filter_1"', '"id":"ai_1"', '"id":"paths_1"', '"id":"for_each_1"', '"id":"if_1"', '"id":"slack_1"', '"id":"small_note"', '"id":"stop_1"', '"id":"slack_2"']);
    // The same input gets the same ids: they are what the run log and retries call the steps.
    expect(ok(v2(def.steps)).steps).toEqual(def.steps);
    expect(asLinear(def)).toBeNull();
  });

  test("every problem is reported at once, each with its path into the step list", () => {
    expect(
      problemsOf(
        v2([
          slack("a", { id: "same" }),
          { type: "if", id: "same", conditions: amountOver(1), then: [{ type: "http", config: { method: "POST" } }] },
          { type: "if", conditions: amountOver(1), then: [] },
          { type: "nope", config: {} },
          { type: "slack", id: "9bad", config: { webhook_url: "{{secrets.X}}", text: "x" } },
        ]),
      ),
    ).toEqual([
      { path: "steps.1.id", message: 'the id "same" is already used by steps.0' },
      { path: "steps.1.then.0.config.url", message: "is required" },
      { path: "steps.2.then", message: "then needs at least one step" },
      { path: "steps.3.type", message: expect.stringContaining("unknown step type; expected one of:") },
      { path: "steps.4.id", message: "must be 1-64 letters, digits or _, not starting with a digit" },
    ]);
  });

  test("conditions: shape, operator, value and a pattern that RE2 cannot run are refused with their paths", () => {
    expect(
      problemsOf(
        v2([
          slack("a", { when: { all: [{ field: "trigger.body.x", op: "bigger", value: 1 }] } }),
          slack("b", { when: { all: [{ field: "trigger.body.x", op: "in", value: "a" }] } }),
          slack("c", { when: { all: [{ field: "body.x", op: "eq", value: 1 }] } }),
          slack("d", { when: { all: [{ field: "trigger.body.x", op: "matches", value: "(\\w)\\1" }] } }),
          slack("e", { when: { some: [] } }),
          slack("f", { when: { all: [{ field: "trigger.body.x", op: "gt" }] } }),
        ]),
      ).map((p) => p.path),
    ).toEqual(["steps.0.when.all.0.op", "steps.1.when.all.0.value", "steps.2.when.all.0.field", "steps.3.when.all.0.value", "steps.4.when", "steps.5.when.all.0.value"]);
    const pattern = problemsOf(v2([slack("d", { when: { all: [{ field: "trigger.body.x", op: "matches", value: "(\\w)\\1" }] } })]));
    expect(pattern[0]!.message).toMatch(/backreferences .* RE2/);
    expect(problemsOf(v2([slack("g", { when: { any: [{ field: "trigger.body.x", op: "matches", value: "^(a+)+$", ignore_case: true }] } })]))).toEqual([]);
  });

  test("limits: at most 50 steps, nesting at most 5 deep, a for each of at most 1000 items — each named in its message", () => {
    const many = Array.from({ length: 63 }, (_, i) => slack(`n${i}`));
    expect(problemsOf(v2(many))).toEqual([{ path: "steps", message: "an applet can have at most 50 steps; this one has 63" }]);
    expect(problemsOf(v2(Array.from({ length: 50 }, (_, i) => slack(`n${i}`))))).toEqual([]);
    let nested: unknown = slack("deep");
    for (let i = 0; i < 6; i++) nested = { type: "if", conditions: amountOver(i), then: [nested] };
    expect(problemsOf(v2([nested]))).toEqual([{ path: "steps.0.then.0.then.0.then.0.then.0.then.0.then.0", message: "steps can be nested at most 5 deep; this one is 6 deep" }]);
    let five: unknown = slack("deep");
    for (let i = 0; i < 5; i++) five = { type: "if", conditions: amountOver(i), then: [five] };
    expect(problemsOf(v2([five]))).toEqual([]);
    expect(problemsOf(v2([{ type: "for_each", items: "{{trigger.body.items}}", max_items: 1001, steps: [slack("x")] }]))).toEqual([
      { path: "steps.0.max_items", message: "a for each runs at most 1000 items" },
    ]);
  });

  test("a timing sits only on a top-level action, and the problem says so", () => {
    const timing = { at: "-1h", anchor: "trigger.body.starts_at" };
    expect(problemsOf(v2([{ type: "if", conditions: amountOver(1), then: [slack("x", { timing })] }]))).toEqual([
      { path: "steps.0.then.0.timing", message: "only top-level actions can carry a timing; this action is inside an if step" },
    ]);
    expect(problemsOf(v2([{ type: "stop", status: "skipped", timing }, slack("x")]))).toEqual([{ path: "steps.0.timing", message: "only actions can carry a timing (and only top-level ones)" }]);
    // On a top-level action it checks as in version 1, with the step's path.
    expect(problemsOf(v2([{ type: "filter", code: "" }, slack("x", { timing: { at: "soon" } })]))).toEqual([{ path: "steps.1.timing.at", message: expect.stringContaining("must be an offset") }]);
    expect(problemsOf(v2([{ type: "filter", code: "" }, slack("x", { timing })]))).toEqual([]);
  });

  test("several AI steps, each with its own output name", () => {
    const ai = (output?: string) => ({ type: "ai", model: "m", prompt: "p", ...(output ? { output } : {}) });
    expect(problemsOf(v2([ai("summary"), ai("class"), slack("{{ai.summary}} {{ai.class}}")]))).toEqual([]);
    expect(problemsOf(v2([ai("summary"), ai("summary"), slack("x")]))).toEqual([
      { path: "steps.1.output", message: 'the AI output name "summary" is already used by steps.0; each AI step needs its own' },
    ]);
    expect(problemsOf(v2([ai(), ai(), slack("x")]))[0]!.path).toBe("steps.1.output");
  });

  test("a version that is neither 1 nor 2 is refused in words", () => {
    expect(problemsOf({ version: 3, trigger: { type: "webhook", config: {} }, steps: [] })).toEqual([{ path: "version", message: "must be 2 (or 1 for a file from an earlier release)" }]);
  });

  test("a condition on a trigger field the sample lacks is a warning, not an error", () => {
    const def = ok(
      v2([
        { type: "if", conditions: { all: [{ field: "trigger.body.amount", op: "gt", value: 1 }, { any: [{ field: "trigger.body.nope", op: "exists" }] }] }, then: [slack("x")] },
        slack("y", { when: { all: [{ field: "trigger.headers.x", op: "exists" }] } }),
      ]),
    );
    expect(sampleFieldWarnings(def, { body: { amount: 3 }, headers: {} })).toEqual([
      { path: "steps.0.conditions.all.1.any.0.field", message: "the trigger's sample has no trigger.body.nope; for an event without it the condition sees a missing value" },
      { path: "steps.1.when.all.0.field", message: "the trigger's sample has no trigger.headers.x; for an event without it the condition sees a missing value" },
    ]);
  });

  test("credentials and secret references are found in nested steps, labelled by step", () => {
    const def = ok(v2([{ type: "for_each", id: "each", items: "{{trigger.body.items}}", steps: [{ type: "slack", id: "tell", config: { webhook_url: "https://hooks.slack.com/services/T/B/x", text: "{{secrets.NOPE}}" } }] }]));
    expect(credentialSpots(def, pluginFields).map((s) => [s.path.join("."), s.label])).toEqual([["steps.0.steps.0.config.webhook_url", "Step tell (slack): Webhook URL"]]);
    expect(missingSecretRefs(def, [])).toEqual([{ path: "definition.steps.0.steps.0.config.text", name: "NOPE" }]);
    const fromOne = ok({ version: 1, trigger: { type: "webhook", config: {} }, filter: { code: "// {{secrets.IN_CODE}}" }, actions: [slack("x")] });
    expect(credentialSpots(fromOne, pluginFields).map((s) => s.label)).toEqual(["Action 1 (slack): Webhook URL"]);
    // Filter code is code, not a template.
    expect(missingSecretRefs(fromOne, [])).toEqual([{ path: "definition.steps.1.config.webhook_url", name: "SLACK_WEBHOOK" }]);
  });

  test("the change summary compares steps by id", () => {
    const a = ok(v2([slack("x", { id: "tell" }), { type: "stop", id: "end", status: "skipped" }]));
    const b = ok(v2([{ type: "stop", id: "end", status: "succeeded" }, slack("y", { id: "tell" }), slack("z", { id: "more" })]));
    const content = (definition: Definition) => ({ name: "n", enabled: true, definition: definition as unknown as Record<string, unknown> });
    expect(changeSummary(content(a), { ...content(b), source: "save" })).toBe("Step end (stop): status; step tell (slack): text; step more (slack) added");
  });
});

describe("version 1 read as steps", () => {
  const DIR = path.resolve(__dirname, "../../fixtures/applets");
  const fixtures = readdirSync(DIR).filter((f) => f.endsWith(".json") && !f.startsWith("invalid"));
  const exported = (JSON.parse(readFileSync(path.resolve(__dirname, "../../fixtures/export.json"), "utf8")) as { definition: DefinitionV1 }[]).map((a, i) => [`export.json #${i + 1}`, a.definition] as const);
  const seeds = APPLET_EXAMPLES.map((e) => [`example ${e.key}`, e.definition({ inboundDomain: "in.example.com" }) as unknown as DefinitionV1] as const);
  const all = [...fixtures.map((f) => [f, JSON.parse(readFileSync(path.join(DIR, f), "utf8")) as DefinitionV1] as const), ...exported, ...seeds];

  test.each(all)("%s loads as steps (filter, ai, action_N) and round-trips through export and import unchanged", (_name, v1) => {
    const def = ok(v1);
    expect(def.version).toBe(2);
    // The same steps a version 1 reader would have run, in the same order, with the same configs.
    expect(topLevelActions(def).map((a) => [a.id, a.type])).toEqual(v1.actions.map((a, i) => [`action_${i + 1}`, a.type]));
    expect(def.steps.some((s) => s.type === "filter")).toBe(Boolean(v1.filter));
    expect(def.steps.some((s) => s.type === "ai")).toBe(Boolean(v1.transform));
    // Export writes version 2; importing it gives the same definition; the linear form is the v1 meaning.
    const exportedAgain = JSON.parse(JSON.stringify(def)) as unknown;
    expect(ok(exportedAgain)).toEqual(def);
    expect(ok(asLinear(def))).toEqual(def);
    // A row stored by an earlier release (version 1, as its schema wrote it) reads as the same steps.
    expect(storedDefinition(asLinear(def))).toEqual(def);
    expect(fromV1(asLinear(def)!)).toEqual(def);
  });
});


describe("respond with data names steps by id", () => {
  test("a response template reads steps.<id> and keeps steps.0 as the first action", () => {
    const step = (id: string, kind: "action" | "transform", name: string, output: unknown) => ({ id, kind, name, status: "succeeded", attempt: 1, output, warnings: [], logs: [], started_at: "2026-01-01T00:00:00Z", duration_ms: 1 });
    const run = { id: "run_1", status: "succeeded", attempt: 1, steps: [step("ai", "transform", "m", { value: "hi" }), step("lookup", "action", "http", { status: 200, body: { known: true } })] } as unknown as Run;
    const r = renderWebhookResponse({ respond_body: '{"a":"{{steps.0.output.status}}","b":"{{steps.lookup.output.body.known}}"}' }, run, {});
    expect(JSON.parse(r.body)).toEqual({ a: "200", b: "true" });
  });
});
