import { validateTiming } from "@whenthen/schedules";
import { http, HttpResponse } from "msw";
import { afterAll, describe, expect, test } from "vitest";
import { actionFacts, actionRegistry } from "@/lib/actions";
import type { AlertText } from "@/lib/actions/types";
import { channelActions, checkChannel } from "@/lib/alerts/channel";
import { ActionError } from "@/lib/core/errors";
import { emptyTriggerState } from "@/lib/triggers/types";
import { objectShape, type FieldMeta } from "@/lib/plugin";
import { renderConfig } from "@/lib/template";
import { checkDefinition } from "@/lib/definition";
import { draftFromDefinition } from "@/components/editor/draft";
import { wordProblem } from "@/components/editor/problems";
import { nextRunOf, triggerRegistry } from "@/lib/triggers";
import { createActionContext, makeTempDir, removeTempDirs } from "../helpers/action-context";
import { loadConfig } from "@/lib/core/config";
import { server, useHttpMocks } from "../helpers/http";

/**
 * The plug-in contract, one suite for every plug-in of both registries, so a new trigger or
 * action gets these checks by being registered. Its form fields (generated from the schema's
 * metadata) are schema keys; required fields are not optional; the example config parses and an
 * unknown key is refused; every action that talks HTTP treats 429 and 5xx as retryable and every
 * other 4xx as final, against msw at the boundary.
 */
useHttpMocks();
afterAll(removeTempDirs);

interface Plugin {
  type: string;
  configSchema: { safeParse(v: unknown): { success: boolean; error?: { issues: { code: string; path: PropertyKey[] }[] } } };
  fields: FieldMeta[];
  exampleConfig: Record<string, unknown>;
  urlFields?: readonly string[];
  typedConfig?: readonly string[];
}

const plugins: [string, Plugin][] = [
  ...[...triggerRegistry.values()].map((p): [string, Plugin] => [`trigger ${p.type}`, p as unknown as Plugin]),
  ...[...actionRegistry.values()].map((p): [string, Plugin] => [`action ${p.type}`, p as unknown as Plugin]),
];

const KINDS = ["text", "textarea", "select", "secret", "json", "number", "boolean", "list", "cron", "timezone"];

describe.each(plugins)("plug-in contract: %s", (_name, plugin) => {
  const keys = Object.keys(objectShape(plugin.configSchema as never));

  test("has form fields, each a schema key with a known kind and a label", () => {
    expect(plugin.fields.length).toBeGreaterThan(0);
    for (const f of plugin.fields) {
      expect(keys).toContain(f.name);
      expect(KINDS).toContain(f.kind);
      expect(f.label.trim()).not.toBe("");
      if (f.kind === "select") expect(f.options?.length).toBeGreaterThan(0);
      if (f.showWhen) expect(keys).toContain(f.showWhen.field);
    }
  });

  test("its URL fields and typed keys are schema keys", () => {
    for (const k of [...(plugin.urlFields ?? []), ...(plugin.typedConfig ?? [])]) expect(keys).toContain(k);
  });

  test("the example config parses", () => {
    const parsed = plugin.configSchema.safeParse(plugin.exampleConfig);
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  test("an unknown key is refused", () => {
    const parsed = plugin.configSchema.safeParse({ ...plugin.exampleConfig, not_a_field_of_this_plugin: 1 });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => i.code)).toContain("unrecognized_keys");
  });

  test("every required field is required by the schema (where it is shown)", () => {
    for (const f of plugin.fields.filter((x) => x.required)) {
      const config: Record<string, unknown> = { ...plugin.exampleConfig };
      if (f.showWhen) config[f.showWhen.field] = f.showWhen.equals[0];
      delete config[f.name];
      const parsed = plugin.configSchema.safeParse(config);
      expect(parsed.success, `${f.name} left out`).toBe(false);
      expect(parsed.error!.issues.some((i) => i.path[0] === f.name), `an issue names ${f.name}`).toBe(true);
    }
  });
});

/** What the editor shows for a save's problems (components/editor/problems), for every field of every plug-in. */
const catalog = {
  triggers: [...triggerRegistry.values()].map((t) => ({ type: t.type, label: t.label, description: t.description, fields: t.fields, ingredients: t.ingredients, sample: t.sample, can_fetch: false, fetch_label: "Fetch now" })),
  actions: [...actionRegistry.values()].map((a) => ({ type: a.type, label: a.label, description: a.description, fields: a.fields, available: true })),
};
const BAD_VALUES: unknown[] = ["", "x", -5, 1e9, 1.5, true, [], {}];
/** zod's own wording, which no form should show. */
const ZOD_WORDS = /Invalid input|Invalid option|Too small|Too big|expected \w+, received|>=|<=/;

/** A field's key as the message names it: quoted, as the message's first word, or (with an underscore) anywhere. */
const namesKey = (message: string, key: string) =>
  new RegExp(`["'\`]${key}["'\`]|^${key}\\b`).test(message) || (key.includes("_") && message.includes(key));

describe.each(plugins)("plug-in fields in the editor's words: %s", (name, plugin) => {
  test("every field's validation message names the field by its label, never by its config key, and in words, not zod's", () => {
    const isTrigger = name.startsWith("trigger ");
    const type = name.split(" ")[1]!;
    const seen: string[] = [];
    for (const f of plugin.fields) {
      for (const value of BAD_VALUES) {
        const config: Record<string, unknown> = { ...plugin.exampleConfig, [f.name]: value };
        if (f.showWhen) config[f.showWhen.field] ??= f.showWhen.equals[0];
        const definition = isTrigger
          ? { version: 1, trigger: { type, config }, actions: [{ type: "http", config: { url: "https://example.com/hook" } }] }
          : { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type, config }] };
        const checked = checkDefinition(definition);
        if (checked.ok) continue;
        const draft = draftFromDefinition(catalog, { name: "x", definition: definition as never });
        for (const p of checked.problems) {
          const worded = wordProblem(catalog, draft, { ...p, path: `definition.${p.path}` });
          const key = (isTrigger ? /^trigger\.config\.([^.]+)/ : /^actions\.0\.config\.([^.]+)/).exec(p.path)?.[1];
          const shown = `${worded.where}: ${worded.message}`;
          seen.push(shown);
          expect(worded.message, `${f.name} = ${JSON.stringify(value)}: ${shown}`).not.toMatch(ZOD_WORDS);
          if (key) expect(namesKey(worded.message, key), `${f.name} = ${JSON.stringify(value)}: ${shown}`).toBe(false);
        }
      }
    }
    // Bad values were refused at all (the checks above ran).
    expect(seen.length).toBeGreaterThan(0);
  });
});

describe.each([...triggerRegistry.values()].filter((p) => p.preview).map((p) => [p.type, p] as const))("Fetch now: %s", (_type, plugin) => {
  test("the config keys Fetch now reads are enough for the schema: the others take their defaults", () => {
    expect(plugin.previewReads, "a trigger with a preview lists the keys it reads").toBeDefined();
    const read = Object.fromEntries(plugin.previewReads!.filter((k) => k in plugin.exampleConfig).map((k) => [k, plugin.exampleConfig[k]]));
    expect(plugin.configSchema.safeParse(read).error?.issues ?? []).toEqual([]);
  });
});

describe.each([...triggerRegistry.values()].map((p) => [p.type, p] as const))("trigger contract: %s", (_type, plugin) => {
  test("its sample has every ingredient it lists", () => {
    for (const i of plugin.ingredients) expect(Object.keys(plugin.sample)).toContain(i.name);
  });

  test("a button label for its preview only when it has a preview", () => {
    if (plugin.previewLabel !== undefined) expect(typeof plugin.preview).toBe("function");
  });

  test("what its feed needs works on the example config", async () => {
    const config = plugin.configSchema.parse(plugin.exampleConfig);
    if (plugin.feed === "polled") {
      const state = emptyTriggerState();
      expect(() => validateTiming(plugin.timing(config, state))).not.toThrow();
      const from = new Date("2026-03-07T12:00:00.000Z");
      expect(nextRunOf(plugin, config, from, state).getTime()).toBeGreaterThan(from.getTime());
    } else if (plugin.feed === "mail") {
      expect(typeof plugin.match(config, { email: plugin.sample as never, envelopeRcpts: [] })).toBe("boolean");
    } else if (plugin.feed === "listen") {
      // Told to stop before it began (the worker stopping as it took the lock), it returns without
      // connecting anywhere or storing anything.
      const abort = new AbortController();
      abort.abort("shutdown");
      const emitted: unknown[] = [];
      const ctx = {
        ...createActionContext(),
        render: async (t: string) => t,
        redact: <T>(v: T) => v,
        signal: abort.signal,
        appletId: "contract",
        emit: async (events: unknown[]) => (emitted.push(...events), 0),
        connected: async () => void emitted.push("connected"),
        sleep: async () => undefined,
      };
      await plugin.listen(config, emptyTriggerState(), ctx);
      expect(emitted).toEqual([]);
    } else {
      const outcome = plugin.handleRequest(
        config,
        { method: "POST", headers: {}, query: {}, rawBody: Buffer.from("{}"), contentType: "application/json", receivedAt: "2026-03-07T12:00:00.000Z" },
        { render: () => "", nowMs: () => Date.parse("2026-03-07T12:00:00.000Z") },
      );
      expect(typeof outcome.accept).toBe("boolean");
    }
  });
});

/** A fake secret shaped like a bot token, so every example that names one renders to a usable value. */
const FAKE_SECRET = "7000000001:AAHexampleexampleexampleexample00";

async function runWithStatus(type: string, status: number): Promise<{ requests: number; error: unknown }> {
  const plugin = actionRegistry.get(type)!;
  let requests = 0;
  server.use(
    http.all("*", () => {
      requests++;
      // JSON every provider can read: an error body in the shapes Slack, Discord, Telegram, ntfy and Pushover use.
      return HttpResponse.json({ ok: false, error_code: status, description: `status ${status}`, message: `status ${status}`, error: `status ${status}`, errors: [`status ${status}`] }, { status });
    }),
  );
  const rendered = renderConfig(plugin.exampleConfig, { trigger: { body: { title: "Order #1042", customer: { name: "Ada" } }, title: "A title", content: "Text" }, secrets: () => FAKE_SECRET }, { typedKeys: plugin.typedConfig });
  const config = plugin.configSchema.parse(rendered.rendered);
  const error = await plugin.run(config, createActionContext()).then(
    () => null,
    (err: unknown) => err,
  );
  return { requests, error };
}

describe("plug-in contract: HTTP-based actions", () => {
  const httpBased: string[] = [];

  test.each([...actionRegistry.keys()])("action %s: 429 and 5xx are retryable, every other 4xx is not", async (type) => {
    const probe = await runWithStatus(type, 503);
    if (probe.requests === 0) return; // not HTTP-based through ctx.http (email, note, sheets' own client)
    httpBased.push(type);
    for (const status of [429, 500, 502, 503, 504]) {
      const { error } = await runWithStatus(type, status);
      expect(error, `${type} on ${status}`).toBeInstanceOf(ActionError);
      expect((error as ActionError).retryable, `${type} on ${status}`).toBe(true);
    }
    for (const status of [400, 401, 403, 404, 405, 408, 409, 410, 413, 422]) {
      const { error } = await runWithStatus(type, status);
      expect(error, `${type} on ${status}`).toBeInstanceOf(ActionError);
      expect((error as ActionError).retryable, `${type} on ${status}`).toBe(false);
    }
  });

  test("the suite above checked the HTTP actions (it cannot pass by checking none)", () => {
    expect(httpBased).toEqual(expect.arrayContaining(["http", "slack", "discord", "push", "telegram", "homeassistant", "matrix", "gotify"]));
  });
});

/** An alert as lib/alerts/message.ts words one, with the facts the dispatcher adds. */
const ALERT: AlertText = {
  title: "whenthen: Orders failed",
  text: "The run failed at 14:05 UTC: timeout\nhttps://when.example.com/runs/r1",
  link: "https://when.example.com/runs/r1",
  facts: { alert_id: "alert-1", applet_id: "applet-1", kind: "failure" },
};

describe.each(channelActions().map((a) => [a.type, a] as const))("alert channel contract: %s", (_type, action) => {
  const keys = Object.keys(objectShape(action.configSchema));
  const { messageFields } = action.alert;
  // The example as a channel: where the alert goes, without what it says.
  const channel = Object.fromEntries(Object.entries(action.exampleConfig).filter(([k]) => !messageFields.includes(k)));

  test("has a label, and its message fields are config keys", () => {
    expect(action.alert.label.trim()).not.toBe("");
    expect(messageFields.length).toBeGreaterThan(0);
    for (const k of messageFields) expect(keys).toContain(k);
  });

  test("fill writes config keys, keeps what the channel set, and gives a config the action's own schema accepts", () => {
    const filled = action.alert.fill(ALERT, channel);
    for (const k of Object.keys(filled)) {
      expect(keys, `fill wrote ${k}`).toContain(k);
      if (!messageFields.includes(k) && k in channel) expect(filled[k], `fill replaced the channel's ${k}`).toEqual(channel[k]);
    }
    const parsed = action.configSchema.safeParse({ ...channel, ...filled });
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  test("the example without its message fields saves as a channel; with one of them, it is refused by name", () => {
    expect(checkChannel({ type: action.type, config: channel }, "channel", false)).toEqual({ ok: true, channel: { type: action.type, config: channel } });
    const key = messageFields[0]!;
    const refused = checkChannel({ type: action.type, config: { ...channel, [key]: "x" } }, "channel", false);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.problems).toContainEqual({ path: `channel.config.${key}`, message: `${key} is written by whenthen for each alert; leave it out` });
  });
});

describe("plug-in contract: install facts", () => {
  test("every action's facts are snake_case keys no other action reports, with JSON values", () => {
    const config = loadConfig({ DATA_DIR: makeTempDir() });
    const seen: string[] = [];
    for (const a of actionRegistry.values()) {
      for (const [key, value] of Object.entries(a.facts?.({ config }) ?? {})) {
        expect(key, `${a.type}`).toMatch(/^[a-z][a-z0-9_]*$/);
        expect(seen, `${a.type}: ${key}`).not.toContain(key);
        seen.push(key);
        expect(JSON.parse(JSON.stringify(value)), `${a.type}: ${key}`).toEqual(value);
      }
    }
    expect(Object.keys(actionFacts({ config })).sort()).toEqual([...seen].sort());
  });

  test("the suites above checked the alert channels (they cannot pass by checking none)", () => {
    expect(channelActions().map((a) => a.type)).toEqual(expect.arrayContaining(["email", "slack", "discord", "push", "http", "homeassistant", "matrix", "gotify"]));
  });
});
