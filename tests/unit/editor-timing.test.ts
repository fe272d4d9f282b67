import { describe, expect, test } from "vitest";
import { buildDefinition, draftFromDefinition, draftReducer, type Catalog, type Draft, type DraftAction } from "@/components/editor/draft";
import { openProblems, placeProblems, reportProblems } from "@/components/editor/save-problems";
import { wordProblem } from "@/components/editor/problems";
import { anchorNote, anchorOptions, anchorPath, conditionLabel, conditionPath, conditionValueOf, conditionValueText, NO_TIMED, NO_TIMING, offsetWords, timedFromForm, timedToForm, timeLook, timingFromForm, timingToForm } from "@/components/editor/timing";
import { actionRegistry } from "@/lib/actions";
import { checkDefinition, type DefinitionV1 as Definition } from "@/lib/definition";
import { triggerRegistry } from "@/lib/triggers";

/**
 * In the editor without a browser: which sample values an action can be anchored at, the
 * Timing control and the applet's timed settings as form state ⇄ the definition, and where a
 * save's timing problems are shown and in which words.
 */
const catalog: Catalog = {
  triggers: [...triggerRegistry.values()].map((t) => ({ type: t.type, label: t.label, description: t.description, fields: t.fields, ingredients: t.ingredients, sample: t.sample, can_fetch: Boolean(t.preview), fetch_label: t.previewLabel ?? "Fetch now" })),
  actions: [...actionRegistry.values()].map((a) => ({ type: a.type, label: a.label, description: a.description, fields: a.fields, available: true })),
};
const slack = (text: string, timing?: Definition["actions"][number]["timing"]) => ({ type: "slack", config: { webhook_url: "{{secrets.SLACK_WEBHOOK}}", text }, ...(timing ? { timing } : {}) });
const stored = (definition: Definition): Draft => draftFromDefinition(catalog, { name: "Stored", definition });
const roundTrip = (d: Definition): Definition | null => buildDefinition(catalog, stored(d)) as Definition | null;
const apply = (draft: Draft, ...actions: DraftAction[]): Draft => actions.reduce(draftReducer, draft);

describe("which sample values look like a time", () => {
  test.each([
    ["2026-10-12T10:00:00-06:00", "time"],
    ["2026-10-12T16:00:00Z", "time"],
    ["2026-10-12 16:00:00.250+02:00", "time"],
    [1791820800000, "time"],
    ["2026-10-12T10:00:00", "no_zone"],
    ["2026-10-12 10:00", "no_zone"],
    [1791820800, "seconds"],
  ] as const)("%s is %s", (value, kind) => {
    expect(timeLook(value)?.kind).toBe(kind);
  });

  test.each([["booking.created"], ["2026-10-12"], ["10:00"], ["2026-02-31T10:00:00Z"], [42], [3.5], [true], [null], [{ at: 1 }], ["1791820800000"]])("%s is not a time", (value) => {
    expect(timeLook(value)).toBeNull();
  });

  test("a time is read as the planner reads it (the instant, zone applied)", () => {
    expect(timeLook("2026-10-12T10:00:00-06:00")).toEqual({ kind: "time", at: Date.parse("2026-10-12T16:00:00Z") });
  });

  test("the anchors offered are the sample's time-looking paths as the definition writes them, times first", () => {
    const sample = {
      body: {
        event: "booking.created",
        booking: { id: "b_1", version: 3, starts_at: "2026-10-12T10:00:00-06:00", local: "2026-10-12T10:00:00" },
        reminders: [{ at: 1791820800000 }],
        created: 1791820800,
      },
      headers: { "x-sent-at": "2026-10-11T09:00:00Z", "user-agent": "curl/8" },
      received_at: "2026-10-11T09:00:01Z",
    };
    const options = anchorOptions(sample);
    expect(options.map((o) => [o.path, o.look.kind])).toEqual([
      ["trigger.body.booking.starts_at", "time"],
      ["trigger.body.reminders.0.at", "time"],
      ["trigger.headers.x-sent-at", "time"],
      ["trigger.received_at", "time"],
      ["trigger.body.booking.local", "no_zone"],
      ["trigger.body.created", "seconds"],
    ]);
    expect(options[0]!.sample).toBe("2026-10-12T10:00:00-06:00");
    expect(options[1]!.sample).toBe("1791820800000");
    // Each offered path is one the save accepts as an anchor.
    for (const o of options) {
      const r = checkDefinition({ version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("x", { at: "-24h", anchor: o.path })] });
      expect(r.ok ? [] : r.problems).toEqual([]);
    }
    expect(anchorNote(options[4]!.look)).toMatch(/no time zone/);
    expect(anchorNote(options[5]!.look)).toMatch(/seconds/);
    expect(anchorNote(options[0]!.look)).toBeNull();
  });

  test("the built-in webhook sample offers its arrival time", () => {
    const webhook = catalog.triggers.find((t) => t.type === "webhook")!;
    expect(anchorOptions(webhook.sample).some((o) => o.path === "trigger.received_at" && o.look.kind === "time")).toBe(true);
  });

  test("a key that has no dotted form is not offered", () => {
    expect(anchorPath('trigger.body["starts at"]')).toBeNull();
    expect(anchorPath('trigger.headers["x-at"]')).toBe("trigger.headers.x-at");
    expect(anchorOptions({ body: { "starts at": "2026-10-12T10:00:00Z" } })).toEqual([]);
  });
});

describe("the Timing control ⇄ the action's timing", () => {
  test("no timing is 'run now' and sends nothing", () => {
    expect(timingToForm(undefined)).toEqual(NO_TIMING);
    expect(timingFromForm(NO_TIMING)).toBeUndefined();
  });

  test.each([
    [{ at: "-24h", anchor: "trigger.body.starts_at" }],
    [{ at: "10m" }],
    [{ at: "0", lateness: null }],
    [{ at: "-1h", anchor: "trigger.body.starts_at", lateness: "2h", guard_anchor: false }],
    [{ at: "2d", anchor: "event", guard_anchor: true }],
  ] as const)("%j comes back as it was stored, and still validates", (timing) => {
    const definition: Definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("now"), slack("later", timing)] };
    const back = roundTrip(definition);
    expect(back).toEqual(definition);
    const r = checkDefinition(back);
    expect(r.ok ? [] : r.problems).toEqual([]);
  });

  test("the form's fields make the timing: default anchor and lateness are left out", () => {
    const t = { ...NO_TIMING, mode: "later" as const, at: " -24h ", anchor: "trigger.body.starts_at", lateness: "" };
    expect(timingFromForm(t)).toEqual({ at: "-24h", anchor: "trigger.body.starts_at" });
    expect(timingFromForm({ ...t, anchor: "event" })).toEqual({ at: "-24h" });
    expect(timingFromForm({ ...t, lateness: "30m" })).toEqual({ at: "-24h", anchor: "trigger.body.starts_at", lateness: "30m" });
    // "Never too late" wins over a typed lateness.
    expect(timingFromForm({ ...t, lateness: "30m", neverLate: true })).toEqual({ at: "-24h", anchor: "trigger.body.starts_at", lateness: null });
    expect(timingFromForm({ ...t, guardAnchor: false })).toEqual({ at: "-24h", anchor: "trigger.body.starts_at", guard_anchor: false });
  });

  test("an empty offset is sent, so the save names the field", () => {
    const def = buildDefinition(catalog, apply(stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("x")] }), { kind: "setTiming", key: 0, timing: { ...NO_TIMING, mode: "later" } })) as Definition;
    expect(def.actions[0]!.timing).toEqual({ at: "" });
    const r = checkDefinition(def);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems.map((p) => p.path)).toContain("actions.0.timing.at");
  });

  test("a timing key the form does not know survives an edit", () => {
    const form = timingToForm({ at: "-24h", from_a_newer_version: 1 });
    expect(timingFromForm({ ...form, at: "-2h" })).toEqual({ at: "-2h", from_a_newer_version: 1 });
  });

  test.each([
    ["-24h", "24 h before"],
    ["30m", "30 min after"],
    ["+2d", "2 d after"],
    ["1h30m", "1 h 30 min after"],
    ["0", "at"],
    ["0m", "at"],
    ["soon", null],
    ["", null],
  ] as const)("offset %s reads %s", (at, words) => {
    expect(offsetWords(at)).toBe(words);
  });
});

describe("the applet's timed settings ⇄ the definition's timed", () => {
  const full = {
    subject: { id: "{{trigger.body.booking.id}}", version: "{{trigger.body.booking.version}}", type: "booking" },
    supersede: { path: "trigger.body.event", values: ["booking.rescheduled", "booking.cancelled"], cancel_values: ["booking.cancelled"] },
    contact: { id: "{{trigger.body.contact.id}}", timezone: "{{trigger.body.contact.tz}}" },
    quiet_hours: { start: "21:00", end: "08:00", mode: "defer" as const, timezone: "America/Mexico_City" },
    frequency_cap: { max: 1, per: "1d" },
  };

  test("every setting comes back as it was stored, and validates", () => {
    const definition: Definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("x", { at: "-24h", anchor: "trigger.body.starts_at" })], timed: full };
    const back = roundTrip(definition);
    expect(back).toEqual(definition);
    const r = checkDefinition(back);
    expect(r.ok ? [] : r.problems).toEqual([]);
  });

  test("nothing filled in sends no timed; one field of a part sends the part, so the save names what is missing", () => {
    expect(timedFromForm(NO_TIMED)).toBeUndefined();
    expect(timedToForm(undefined)).toEqual(NO_TIMED);
    expect(timedFromForm({ ...NO_TIMED, subjectId: "{{trigger.body.id}}" })).toEqual({ subject: { id: "{{trigger.body.id}}", version: "" } });
    expect(timedFromForm({ ...NO_TIMED, quietMode: "skip" })).toEqual({ quiet_hours: { start: "", end: "", mode: "skip" } });
    const r = checkDefinition({ version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("x", { at: "1h" })], timed: timedFromForm({ ...NO_TIMED, subjectId: "{{trigger.body.id}}" }) });
    expect(r.ok ? [] : r.problems.map((p) => p.path)).toEqual(["timed.subject.version"]);
  });

  test("the values are typed comma separated; a cap that is not a number is sent as typed", () => {
    const form = { ...NO_TIMED, supersedePath: "trigger.body.event", supersedeValues: " booking.rescheduled ,booking.cancelled, ", cancelValues: "booking.cancelled", capMax: "two", capPer: "1d" };
    expect(timedFromForm(form)).toEqual({
      supersede: { path: "trigger.body.event", values: ["booking.rescheduled", "booking.cancelled"], cancel_values: ["booking.cancelled"] },
      frequency_cap: { max: "two", per: "1d" },
    });
    expect(timedToForm(timedFromForm(form)).supersedeValues).toBe("booking.rescheduled, booking.cancelled");
  });

  test("keys the form does not know survive, at the top and inside a part", () => {
    const form = timedToForm({ ...full, later_option: true, quiet_hours: { ...full.quiet_hours, weekdays_only: true } });
    const back = timedFromForm({ ...form, quietStart: "22:00" }) as Record<string, unknown>;
    expect(back.later_option).toBe(true);
    expect(back.quiet_hours).toEqual({ ...full.quiet_hours, start: "22:00", weekdays_only: true });
  });
});

describe("a save's timing problems, at the field", () => {
  const timedDraft = (): Draft =>
    apply(
      stored({ version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("now"), slack("later", { at: "-24h", anchor: "trigger.body.starts_at" })], timed: { quiet_hours: { start: "21:00", end: "21:00" } } }),
    );

  test("each is placed under its timing field or timed setting, in the form's words", () => {
    const problems = [
      { path: "definition.actions.1.timing.at", message: 'must be an offset such as "-24h"' },
      { path: "definition.actions.1.timing.lateness", message: "must be a duration" },
      { path: "definition.actions.1.timing", message: "unknown key: when" },
      { path: "definition.timed.quiet_hours.end", message: "start and end are the same time, so the window is empty" },
      { path: "definition.timed.supersede.values.0", message: "too long" },
      { path: "definition.timed.subject", message: "unknown key: kind" },
    ];
    const d = timedDraft();
    const placed = placeProblems(d, problems);
    expect([...placed.slots.get(1)!.timing]).toEqual([
      ["at", ['must be an offset such as "-24h"']],
      ["lateness", ["must be a duration"]],
      ["", ["unknown key: when"]],
    ]);
    expect(placed.slots.get(1)!.fields.size).toBe(0);
    expect([...placed.timed]).toEqual([
      ["quiet_hours.end", ["start and end are the same time, so the window is empty"]],
      ["supersede.values", ["too long"]],
      ["subject", ["unknown key: kind"]],
    ]);
    expect(problems.map((p) => wordProblem(catalog, d, p).where)).toEqual([
      "Action 2 (Slack message) › Timing › Offset",
      "Action 2 (Slack message) › Timing › Lateness",
      "Action 2 (Slack message) › Timing",
      "Timed actions › Quiet hours end",
      "Timed actions › Values that replace the plan",
      "Timed actions › Subject",
    ]);
  });

  test("a timing problem clears when its field is edited, and the others stay", () => {
    const d = timedDraft();
    const reported = reportProblems(catalog, d, [
      { path: "definition.actions.1.timing.at", message: "bad" },
      { path: "definition.actions.1.timing.lateness", message: "bad" },
      { path: "definition.timed.quiet_hours.end", message: "empty window" },
    ]);
    expect(openProblems(catalog, d, reported)).toHaveLength(3);
    const fixedAt = apply(d, { kind: "setTiming", key: 1, timing: { ...d.actions[1]!.timing, at: "-2h" } });
    expect(openProblems(catalog, fixedAt, reported).map((p) => p.path)).toEqual(["definition.actions.1.timing.lateness", "definition.timed.quiet_hours.end"]);
    const fixedEnd = apply(fixedAt, { kind: "setTimed", timed: { ...fixedAt.timed, quietEnd: "08:00" } });
    expect(openProblems(catalog, fixedEnd, reported).map((p) => p.path)).toEqual(["definition.actions.1.timing.lateness"]);
  });
});

describe("the timed actions' conditions in the editor", () => {
  const conditions = {
    all: [
      { field: "trigger.body.status", op: "eq", value: "confirmed" },
      { field: "trigger.body.count", op: "gte", value: 2 },
      { field: "trigger.body.code", op: "eq", value: "42" },
    ],
    any: [
      { field: "trigger.body.kind", op: "in", value: ["visit", "call"] },
      { field: "contact.id", op: "exists" },
    ],
  };
  const def = (c: unknown): Definition =>
    ({ version: 1, trigger: { type: "webhook", config: {} }, actions: [slack("later", { at: "-24h", anchor: "trigger.body.starts_at" })], timed: { conditions: c } }) as Definition;

  test("form rows ⇄ the definition: text stays text, JSON stays JSON, a string that reads as JSON is shown quoted", () => {
    const form = timedToForm({ conditions });
    expect(form.conditions.map((r) => [r.group, r.field, r.op, r.value])).toEqual([
      ["all", "trigger.body.status", "eq", "confirmed"],
      ["all", "trigger.body.count", "gte", "2"],
      ["all", "trigger.body.code", "eq", '"42"'],
      ["any", "trigger.body.kind", "in", '["visit","call"]'],
      ["any", "contact.id", "exists", ""],
    ]);
    expect(timedFromForm(form)).toEqual({ conditions });
    expect(roundTrip(def(conditions))!.timed).toEqual({ conditions });
    expect(checkDefinition(def(conditions)).ok).toBe(true);
    expect([conditionValueOf(" confirmed "), conditionValueOf("2"), conditionValueOf('"2"'), conditionValueOf(""), conditionValueText("true")]).toEqual(["confirmed", 2, "2", undefined, '"true"']);
    expect(timedFromForm({ ...NO_TIMED, conditions: [] })).toBeUndefined();
  });

  test("a condition's problems are placed on its row, worded by its place in the list, and clear when that row is edited", () => {
    const d = stored(def(conditions));
    // Row 4 (the first `any`) is `conditions.any.0`.
    expect(conditionPath(d.timed.conditions, 3)).toBe("conditions.any.0");
    const problems = [
      { path: "definition.timed.conditions.any.0.value", message: "in takes a list" },
      { path: "definition.timed.conditions.all.1.op", message: "must be one of eq, ne" },
    ];
    const placed = placeProblems(d, problems);
    expect([...placed.timed]).toEqual([
      ["conditions.any.0.value", ["in takes a list"]],
      ["conditions.all.1.op", ["must be one of eq, ne"]],
    ]);
    expect(problems.map((p) => wordProblem(catalog, d, p).where)).toEqual(["Timed actions › Condition 4 › Value", "Timed actions › Condition 2 › Test"]);
    expect(conditionLabel(d.timed.conditions, "conditions.all.0")).toBe("Condition 1");
    const reported = reportProblems(catalog, d, problems);
    const rows = d.timed.conditions.map((r, i) => (i === 3 ? { ...r, value: '["visit"]' } : r));
    const edited = draftReducer(d, { kind: "setTimed", timed: { ...d.timed, conditions: rows } });
    expect(openProblems(catalog, edited, reported).map((p) => p.path)).toEqual(["definition.timed.conditions.all.1.op"]);
  });
});
