import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { buildDefinition as buildAny, draftFromDefinition, draftReducer, NEW_TRANSFORM, shownName, snapshotOf, type Catalog, type Draft, type DraftAction } from "@/components/editor/draft";
import { openProblems, placeProblems, reportProblems } from "@/components/editor/save-problems";
import { visible, type FormConfig } from "@/components/editor/fields";
import { actionRegistry } from "@/lib/actions";
import { checkDefinition } from "@/lib/definition";
import { triggerRegistry } from "@/lib/triggers";
import type { MetaAction, MetaTrigger } from "@/lib/api/queries";
import type { FieldMeta } from "@/lib/plugin";
import type { DefinitionV1 as Definition } from "@/lib/definition";

/**
 * The editor's draft without a browser: every reducer action, definition → draft → definition
 * round trips over the real plug-ins' field metadata, keys the form does not know, and where a
 * save's problems are shown. The catalog is built from the registries as GET /api/meta builds it.
 */
const catalog: Catalog = {
  triggers: [...triggerRegistry.values()].map((t) => ({ type: t.type, label: t.label, description: t.description, fields: t.fields, ingredients: t.ingredients, sample: t.sample, can_fetch: Boolean(t.preview), fetch_label: t.previewLabel ?? "Fetch now" })),
  actions: [...actionRegistry.values()].map((a) => ({ type: a.type, label: a.label, description: a.description, fields: a.fields, available: true })),
};
const triggerMeta = (type: string): MetaTrigger => catalog.triggers.find((t) => t.type === type)!;
const actionMeta = (type: string): MetaAction => catalog.actions.find((a) => a.type === type)!;

/** A simple applet's definition: the linear form (version 1). */
const buildDefinition = (c: Catalog, d: Draft): Definition | null => buildAny(c, d) as Definition | null;
const roundTrip = (d: Definition): Definition | null => buildDefinition(catalog, draftFromDefinition(catalog, { name: "x", definition: d }));
const apply = (draft: Draft, ...actions: DraftAction[]): Draft => actions.reduce(draftReducer, draft);
const fresh = (): Draft => draftFromDefinition(catalog);
const slack = (text: string) => ({ type: "slack", config: { webhook_url: "{{secrets.SLACK_WEBHOOK}}", text } });
const stored = (definition: Definition, name = "Stored"): Draft => draftFromDefinition(catalog, { name, definition });

/** A value of the field's kind that the form shows and reads back unchanged. */
function sampleValue(f: FieldMeta): unknown {
  switch (f.kind) {
    case "number":
      return 15;
    case "boolean":
      return true;
    case "list":
      return ["{{trigger.a}}", "b"];
    case "json":
      return { Authorization: "Bearer {{secrets.TOKEN}}", n: 1 };
    case "select":
      return f.options![f.options!.length - 1]!.value;
    case "cron":
      return "0 9 * * 1-5";
    case "timezone":
      return "Europe/Berlin";
    case "secret":
      return "{{secrets.TOKEN}}";
    default:
      return `${f.name}: {{trigger.title}}`;
  }
}

/** Every field of a plug-in filled, except those its other values hide (push: the other provider's). */
function filledConfig(fields: FieldMeta[]): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const f of fields) config[f.name] = sampleValue(f);
  const shown = Object.fromEntries(Object.entries(config).filter(([, v]) => typeof v === "string")) as FormConfig;
  for (const f of fields) if (!visible(f, shown)) delete config[f.name];
  return config;
}

describe("definition → draft → definition", () => {
  const dir = path.resolve(__dirname, "../../fixtures/applets");
  const fixtures = readdirSync(dir).filter((f) => f.endsWith(".json") && !f.startsWith("invalid"));

  test.each(fixtures)("fixtures/applets/%s comes back as it was stored, and still validates", (file) => {
    const definition = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as Definition;
    const back = roundTrip(definition);
    expect(back).toEqual(definition);
    expect(checkDefinition(back).ok).toBe(true);
  });

  test.each([...triggerRegistry.keys()])("trigger %s with every field filled comes back as it was", (type) => {
    const definition: Definition = { version: 1, trigger: { type, config: filledConfig(triggerMeta(type).fields) }, actions: [slack("x")] };
    expect(roundTrip(definition)).toEqual(definition);
  });

  test.each([...actionRegistry.keys()])("action %s with every field filled comes back as it was", (type) => {
    const definition: Definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type, config: filledConfig(actionMeta(type).fields) }] };
    expect(roundTrip(definition)).toEqual(definition);
  });

  test("filter, transform, retry and time zone come back as they were", () => {
    const definition: Definition = {
      version: 1,
      trigger: { type: "schedule", config: { cron: "0 8 * * 1", timezone: "UTC" } },
      filter: { code: "set('a', 1);" },
      transform: { model: "openai/gpt-4o-mini", prompt: "Summarize {{trigger.date}}", output: "summary", json: true },
      actions: [slack("{{ai.summary}} {{vars.a}}"), { type: "note", config: { folder: "journal", filename: "{{trigger.date}}.md", content: "- ", mode: "append" } }],
      retry: { max_attempts: 3 },
      timezone: "Europe/Berlin",
    };
    expect(roundTrip(definition)).toEqual(definition);
  });

  test("a new applet has one empty action slot, no trigger and no definition yet", () => {
    const d = fresh();
    expect(d.actions).toHaveLength(1);
    expect(d.actions[0]!.type).toBeNull();
    expect(buildDefinition(catalog, d)).toBeNull();
    expect(shownName(catalog, d)).toBe("");
  });

  test("a stored object body in a text field (the http action's body, as the fixtures import it) survives an edit of another field instead of becoming [object Object]", () => {
    const body = { text: "{{trigger.title}}", count: "{{trigger.count}}" };
    const d = stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/a", method: "POST", body } }] });
    const edited = apply(d, { kind: "setActionConfig", key: 0, cfg: { ...d.actions[0]!.cfg, url: "https://example.com/b" } });
    expect(buildDefinition(catalog, edited)!.actions[0]!.config).toEqual({ url: "https://example.com/b", method: "POST", body });
  });

  test("a poll target stored as a number stays a number, also when it is edited", () => {
    const config = { url: "https://api.example.com/p", path: "data.price", condition: "lt", target: 100, interval_min: 5 };
    const d = stored({ version: 1, trigger: { type: "poll", config }, actions: [slack("x")] });
    expect(d.trigger.cfg.target).toBe("100");
    expect(buildDefinition(catalog, d)!.trigger.config.target).toBe(100);
    const edited = apply(d, { kind: "setTriggerConfig", cfg: { ...d.trigger.cfg, target: "120" } });
    expect(buildDefinition(catalog, edited)!.trigger.config.target).toBe(120);
  });

  test("a sheets cell stored as a number keeps its type while its row is unchanged", () => {
    const d = stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "sheets", config: { spreadsheet_id: "abc", sheet_name: "Sheet1", columns: [42, "{{trigger.body.title}}"] } }] });
    expect(d.actions[0]!.cfg.columns).toEqual(["42", "{{trigger.body.title}}"]);
    expect(buildDefinition(catalog, d)!.actions[0]!.config.columns).toEqual([42, "{{trigger.body.title}}"]);
  });
});

describe("keys the form does not know", () => {
  test("a config key without a field survives editing the fields that exist", () => {
    const d = stored({ version: 1, trigger: { type: "webhook", config: { secret_header: "X-Sig", from_a_newer_version: { on: true } } }, actions: [{ type: "slack", config: { webhook_url: "https://hooks.slack.com/x", text: "a", unfurl: false } }] });
    const edited = apply(d, { kind: "setTriggerConfig", cfg: { ...d.trigger.cfg, secret_header: "X-Other" } }, { kind: "setActionConfig", key: 0, cfg: { ...d.actions[0]!.cfg, text: "b" } });
    const def = buildDefinition(catalog, edited)!;
    expect(def.trigger.config).toEqual({ secret_header: "X-Other", from_a_newer_version: { on: true } });
    expect(def.actions[0]!.config).toEqual({ webhook_url: "https://hooks.slack.com/x", text: "b", unfurl: false });
  });

  test("an action or trigger type this install does not have is kept whole", () => {
    const definition: Definition = { version: 1, trigger: { type: "lorawan", config: { device: "door", port: 1 } }, actions: [{ type: "xmpp", config: { room_id: 42, text: "{{trigger.payload}}" } }, slack("x")] };
    expect(roundTrip(definition)).toEqual(definition);
  });

  test("a stashed type's unknown keys come back with it", () => {
    const d = stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: "https://hooks.slack.com/x", text: "a", unfurl: false } }] });
    const back = apply(d, { kind: "changeAction", key: 0 }, { kind: "pickAction", key: 0, action: actionMeta("discord") }, { kind: "changeAction", key: 0 }, { kind: "pickAction", key: 0, action: actionMeta("slack") });
    expect(buildDefinition(catalog, back)!.actions[0]!.config).toEqual({ webhook_url: "https://hooks.slack.com/x", text: "a", unfurl: false });
  });
});

/** One test per reducer action: the table's type makes a new action kind fail to compile until it has one. */
const reducerCases: { [K in DraftAction["kind"]]: () => void } = {
  pickTrigger() {
    const d = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("schedule"), timeZone: "Asia/Tokyo" });
    expect(d.trigger.type).toBe("schedule");
    // A new schedule starts in the reader's zone: the field's kind says so, not its name.
    expect(d.trigger.cfg).toEqual({ cron: "", timezone: "Asia/Tokyo", catch_up: "", catch_up_limit: "", catch_up_window_hours: "", overlap: "" });
    expect(d.previousTrigger).toBeNull();
    const rss = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("rss"), timeZone: "Asia/Tokyo" });
    expect(rss.trigger.cfg).toEqual({ url: "", interval_min: "", fire_on_first_poll: false, max_items_per_poll: "" });
  },
  changeTrigger() {
    const picked = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("rss"), timeZone: "UTC" }, { kind: "setTriggerConfig", cfg: { url: "https://example.com/feed.xml", interval_min: "15", fire_on_first_poll: false, max_items_per_poll: "" } });
    const changed = apply(picked, { kind: "changeTrigger" });
    expect(changed.trigger.type).toBeNull();
    expect(changed.previousTrigger).toBe("rss");
    // Another type starts afresh; coming back to RSS brings its settings back.
    const other = apply(changed, { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" });
    expect(other.trigger.cfg).toEqual({ verify: "", secret_header: "", hmac_secret: "", tolerance_seconds: "", dedupe_header: "", dedupe_path: "", respond_wait_seconds: "", respond_status: "", respond_body: "", respond_content_type: "" });
    const back = apply(other, { kind: "changeTrigger" }, { kind: "pickTrigger", trigger: triggerMeta("rss"), timeZone: "UTC" });
    expect(back.trigger.cfg.url).toBe("https://example.com/feed.xml");
    expect(back.previousTrigger).toBeNull();
    // Nothing to change while picking.
    expect(draftReducer(changed, { kind: "changeTrigger" })).toBe(changed);
  },
  setTriggerConfig() {
    const d = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("email"), timeZone: "UTC" }, { kind: "setTriggerConfig", cfg: { to_alias: "invoices", from_contains: "", subject_regex: "" } });
    expect(buildDefinition(catalog, d)!.trigger).toEqual({ type: "email", config: { to_alias: "invoices" } });
  },
  pickAction() {
    const d = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" }, { kind: "pickAction", key: 0, action: actionMeta("push") });
    // A required select starts on its first option; a list with one empty row.
    expect(d.actions[0]!.cfg.provider).toBe("ntfy");
    const sheets = apply(d, { kind: "addAction" }, { kind: "pickAction", key: 1, action: actionMeta("sheets") });
    expect(sheets.actions[1]!.cfg.columns).toEqual([""]);
    expect(buildDefinition(catalog, sheets)!.actions.map((a) => a.type)).toEqual(["push", "sheets"]);
  },
  changeAction() {
    const d = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("rss"), timeZone: "UTC" }, { kind: "pickAction", key: 0, action: actionMeta("slack") });
    const typed = apply(d, { kind: "setActionConfig", key: 0, cfg: { ...d.actions[0]!.cfg, text: "New post: {{trigger.title}}" } });
    const changed = apply(typed, { kind: "changeAction", key: 0 });
    expect(changed.actions[0]!.type).toBeNull();
    expect(changed.actions[0]!.previousType).toBe("slack");
    // While it is being picked the slot is not part of the definition.
    expect(buildDefinition(catalog, changed)!.actions).toEqual([]);
    const discord = apply(changed, { kind: "pickAction", key: 0, action: actionMeta("discord") });
    expect(discord.actions[0]!.cfg.content).toBe("");
    const back = apply(discord, { kind: "changeAction", key: 0 }, { kind: "pickAction", key: 0, action: actionMeta("slack") });
    expect(back.actions[0]!.cfg.text).toBe("New post: {{trigger.title}}");
    expect(back.actions[0]!.previousType).toBeNull();
  },
  setActionConfig() {
    const d = apply(fresh(), { kind: "pickAction", key: 0, action: actionMeta("slack") }, { kind: "addAction" }, { kind: "pickAction", key: 1, action: actionMeta("slack") });
    const edited = apply(d, { kind: "setActionConfig", key: 1, cfg: { webhook_url: "https://hooks.slack.com/b", text: "second" } });
    expect(edited.actions[0]).toBe(d.actions[0]);
    expect(edited.actions[1]!.cfg.text).toBe("second");
  },
  addAction() {
    const d = apply(fresh(), { kind: "addAction" }, { kind: "addAction" });
    expect(d.actions.map((a) => a.key)).toEqual([0, 1, 2]);
    // Keys are never reused, so React keeps each slot's inputs apart after a removal.
    const again = apply(d, { kind: "removeAction", key: 2 }, { kind: "addAction" });
    expect(again.actions.map((a) => a.key)).toEqual([0, 1, 3]);
  },
  removeAction() {
    const d = apply(fresh(), { kind: "pickAction", key: 0, action: actionMeta("slack") }, { kind: "addAction" }, { kind: "pickAction", key: 1, action: actionMeta("note") });
    const removed = apply(d, { kind: "removeAction", key: 0 });
    expect(removed.actions.map((a) => a.type)).toEqual(["note"]);
    // The last slot stays.
    expect(draftReducer(removed, { kind: "removeAction", key: 1 })).toBe(removed);
  },
  setFilterCode() {
    const base = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" }, { kind: "pickAction", key: 0, action: actionMeta("slack") });
    const added = apply(base, { kind: "setFilterCode", code: "" });
    expect(buildDefinition(catalog, added)!.filter).toEqual({ code: "" });
    const coded = apply(added, { kind: "setFilterCode", code: "skip('no')" });
    expect(buildDefinition(catalog, coded)!.filter).toEqual({ code: "skip('no')" });
    expect(buildDefinition(catalog, apply(coded, { kind: "setFilterCode", code: null }))).not.toHaveProperty("filter");
  },
  addTransform() {
    const base = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" });
    const added = apply(base, { kind: "addTransform" });
    expect(added.transform).toEqual(NEW_TRANSFORM);
    // Adding twice keeps what was typed.
    const typed = apply(added, { kind: "setTransform", transform: { ...NEW_TRANSFORM, prompt: "p" } });
    expect(draftReducer(typed, { kind: "addTransform" })).toBe(typed);
  },
  setTransform() {
    const base = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" }, { kind: "addTransform" });
    // An empty output name is saved as the default, "output".
    const d = apply(base, { kind: "setTransform", transform: { model: "m", prompt: "p", output: "", json: false } });
    expect(buildDefinition(catalog, d)!.transform).toEqual({ model: "m", prompt: "p", output: "output", json: false });
    expect(buildDefinition(catalog, apply(d, { kind: "setTransform", transform: null }))).not.toHaveProperty("transform");
  },
  setMaxAttempts() {
    const base = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" });
    expect(buildDefinition(catalog, apply(base, { kind: "setMaxAttempts", value: "3" }))!.retry).toEqual({ max_attempts: 3 });
    expect(buildDefinition(catalog, apply(base, { kind: "setMaxAttempts", value: "  " }))).not.toHaveProperty("retry");
  },
  setTimezone() {
    const base = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" });
    expect(buildDefinition(catalog, apply(base, { kind: "setTimezone", value: "Europe/Paris" }))!.timezone).toBe("Europe/Paris");
    expect(buildDefinition(catalog, apply(base, { kind: "setTimezone", value: "" }))).not.toHaveProperty("timezone");
  },
  setTiming() {
    const base = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" }, { kind: "pickAction", key: 0, action: actionMeta("slack") });
    const timed = apply(base, { kind: "setTiming", key: 0, timing: { ...base.actions[0]!.timing, mode: "later", at: "-24h", anchor: "trigger.body.starts_at" } });
    expect(buildDefinition(catalog, timed)!.actions[0]!.timing).toEqual({ at: "-24h", anchor: "trigger.body.starts_at" });
    // The timing belongs to the slot: changing its action keeps it.
    const changed = apply(timed, { kind: "changeAction", key: 0 }, { kind: "pickAction", key: 0, action: actionMeta("discord") });
    expect(buildDefinition(catalog, changed)!.actions[0]!.timing).toEqual({ at: "-24h", anchor: "trigger.body.starts_at" });
    // Back to "now": no timing is sent, and what was typed comes back with "later".
    const now = apply(timed, { kind: "setTiming", key: 0, timing: { ...timed.actions[0]!.timing, mode: "now" } });
    expect(buildDefinition(catalog, now)!.actions[0]).not.toHaveProperty("timing");
    expect(now.actions[0]!.timing.at).toBe("-24h");
  },
  setTimed() {
    const base = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" }, { kind: "pickAction", key: 0, action: actionMeta("slack") });
    expect(buildDefinition(catalog, base)).not.toHaveProperty("timed");
    const d = apply(base, { kind: "setTimed", timed: { ...base.timed, quietStart: "21:00", quietEnd: "08:00" } });
    expect(buildDefinition(catalog, d)!.timed).toEqual({ quiet_hours: { start: "21:00", end: "08:00" } });
  },
  setName() {
    // Until typed in, the name follows the trigger and actions.
    const picked = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("webhook"), timeZone: "UTC" });
    expect(shownName(catalog, picked)).toBe("Webhook → …");
    const withAction = apply(picked, { kind: "pickAction", key: 0, action: actionMeta("slack") });
    expect(shownName(catalog, withAction)).toBe(`Webhook → ${actionMeta("slack").label}`);
    const named = apply(withAction, { kind: "setName", value: "Paid orders" });
    expect(shownName(catalog, apply(named, { kind: "changeAction", key: 0 }))).toBe("Paid orders");
    // Emptied by hand, it stays empty (the save then names the problem).
    expect(shownName(catalog, apply(named, { kind: "setName", value: "" }))).toBe("");
  },
  addStep() {
    const simple = stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: "https://hooks.slack.com/x", text: "a" } }] });
    // An action, the first filter and the first AI step keep a simple applet simple…
    const stillSimple = apply(simple, { kind: "addStep", step: "filter", where: { parent: null, list: "steps" } }, { kind: "addStep", step: "ai", where: { parent: null, list: "steps" } });
    expect(stillSimple.steps).toBeNull();
    expect(buildDefinition(catalog, stillSimple)!.filter).toEqual({ code: "" });
    // …an only-if turns it into steps, with the ids version 1's steps have.
    const branched = apply(simple, { kind: "addStep", step: "if", where: { parent: null, list: "steps" } });
    expect(branched.steps!.map((s) => [s.id, s.kind])).toEqual([
      ["action_1", "action"],
      ["if_1", "if"],
    ]);
    const inThen = apply(branched, { kind: "addStep", step: "stop", where: { parent: branched.steps![1]!.key, list: "then" } });
    const def = buildAny(catalog, inThen) as { version: number; steps: { id: string; type: string; then?: { id: string }[] }[] };
    expect(def.version).toBe(2);
    expect(def.steps[1]!.then!.map((s) => s.id)).toEqual(["stop_1"]);
  },
  steps() {
    const branched = apply(stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: "https://hooks.slack.com/x", text: "a" } }] }), { kind: "addStep", step: "stop", where: { parent: null, list: "steps" } });
    const renamed = apply(branched, { kind: "steps", change: (steps) => steps.map((s) => (s.kind === "stop" ? { ...s, id: "done" } : s)) });
    expect((buildAny(catalog, renamed) as { steps: { id: string }[] }).steps.map((s) => s.id)).toEqual(["action_1", "done"]);
  },
};

describe("draftReducer", () => {
  test.each(Object.entries(reducerCases))("%s", (_kind, run) => run());

  test("an edit changes the snapshot, and undoing it makes it equal again (the unsaved-changes guard)", () => {
    const d = stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("one")] });
    const before = snapshotOf(catalog, d);
    const edited = apply(d, { kind: "setActionConfig", key: 0, cfg: { ...d.actions[0]!.cfg, text: "two" } });
    expect(snapshotOf(catalog, edited)).not.toBe(before);
    expect(snapshotOf(catalog, apply(edited, { kind: "setActionConfig", key: 0, cfg: d.actions[0]!.cfg }))).toBe(before);
    // Opening a stored applet is no change.
    expect(snapshotOf(catalog, stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("one")] }))).toBe(before);
  });
});

describe("problems from a save", () => {
  // Slot 0 is being picked, so definition.actions.0 is slot 1 and definition.actions.1 is slot 2.
  const draft = (): Draft =>
    apply(
      fresh(),
      { kind: "pickTrigger", trigger: triggerMeta("rss"), timeZone: "UTC" },
      { kind: "addAction" },
      { kind: "pickAction", key: 1, action: actionMeta("slack") },
      { kind: "addAction" },
      { kind: "pickAction", key: 2, action: actionMeta("sheets") },
      { kind: "addTransform" },
      { kind: "setFilterCode", code: "x(" },
    );

  test("each problem is shown beside what it is about, by the definition's action index", () => {
    const placed = placeProblems(draft(), [
      { path: "name", message: "required" },
      { path: "definition.trigger.type", message: "unknown type" },
      { path: "definition.trigger.config.url", message: "not a URL" },
      { path: "definition.trigger.config", message: "unknown key: poll_every" },
      { path: "definition.actions", message: "an applet needs at least one action" },
      { path: "definition.actions.0.config.text", message: "required" },
      { path: "definition.actions.0.type", message: "unknown type" },
      { path: "definition.actions.1.config.columns.2", message: "too long" },
      { path: "definition.actions.1.config", message: "unknown key: colour" },
      { path: "definition.actions.7.config.text", message: "no such action" },
      { path: "definition.filter.code", message: "syntax error" },
      { path: "definition.transform.prompt", message: "required" },
      { path: "definition.retry.max_attempts", message: "at most 10" },
      { path: "", message: "invalid applet" },
    ]);
    expect(placed.name).toEqual(["required"]);
    expect(placed.triggerType).toEqual(["unknown type"]);
    expect([...placed.trigger]).toEqual([["url", ["not a URL"]]]);
    expect(placed.actions).toEqual(["an applet needs at least one action"]);
    expect(placed.slots.has(0)).toBe(false);
    expect([...placed.slots.get(1)!.fields]).toEqual([["text", ["required"]]]);
    expect(placed.slots.get(1)!.own).toEqual(["unknown type"]);
    // A list row's problem belongs to the list field.
    expect([...placed.slots.get(2)!.fields]).toEqual([["columns", ["too long"]]]);
    expect(placed.slots.get(2)!.own).toEqual(["unknown key: colour"]);
    expect(placed.filter).toEqual(["syntax error"]);
    expect([...placed.transform]).toEqual([["prompt", ["required"]]]);
    // Every problem is in the summary, also those no field shows (retry, the applet as a whole).
    expect(placed.all).toHaveLength(14);
  });

  test("a problem clears when its field is edited, and stays while other fields change", () => {
    const d = draft();
    const reported = reportProblems(catalog, d, [
      { path: "definition.actions.0.config.text", message: "required" },
      { path: "definition.trigger.config.url", message: "required" },
    ]);
    const otherField = apply(d, { kind: "setActionConfig", key: 1, cfg: { ...d.actions[1]!.cfg, webhook_url: "https://hooks.slack.com/x" } });
    expect(openProblems(catalog, otherField, reported).map((p) => p.path)).toEqual(["definition.actions.0.config.text", "definition.trigger.config.url"]);
    const fixed = apply(otherField, { kind: "setActionConfig", key: 1, cfg: { ...otherField.actions[1]!.cfg, text: "hi" } });
    expect(openProblems(catalog, fixed, reported).map((p) => p.path)).toEqual(["definition.trigger.config.url"]);
    // Typing the old value back brings the problem back: it is about what the field holds.
    expect(openProblems(catalog, apply(fixed, { kind: "setActionConfig", key: 1, cfg: otherField.actions[1]!.cfg }), reported)).toHaveLength(2);
  });

  test("'at least one action' clears as soon as an action is picked; a name problem when the name is typed", () => {
    const d = apply(fresh(), { kind: "pickTrigger", trigger: triggerMeta("rss"), timeZone: "UTC" }, { kind: "setName", value: "" });
    const reported = reportProblems(catalog, d, [
      { path: "definition.actions", message: "an applet needs at least one action" },
      { path: "name", message: "required" },
    ]);
    expect(openProblems(catalog, d, reported)).toHaveLength(2);
    const picked = apply(d, { kind: "pickAction", key: 0, action: actionMeta("slack") });
    expect(openProblems(catalog, picked, reported).map((p) => p.path)).toEqual(["name"]);
    expect(openProblems(catalog, apply(picked, { kind: "setName", value: "Feed" }), reported)).toEqual([]);
  });
});
