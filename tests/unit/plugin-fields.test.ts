import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { actionRegistry } from "@/lib/actions";
import { triggerRegistry } from "@/lib/triggers";
import { PLUGIN_ICON_PATHS } from "@/lib/ui/plugin-icons";

/**
 * The editor's fields are generated from each config schema's metadata (`field(…)` in
 * lib/plugin). fixtures/plugin-fields.json is what the hand-kept `fields` arrays said before the
 * change (dumped from them): the generated forms must say exactly the same, in the same order.
 */
const before = JSON.parse(readFileSync(path.join(__dirname, "../../fixtures/plugin-fields.json"), "utf8")) as {
  triggers: Record<string, unknown[]>;
  actions: Record<string, unknown[]>;
};

// Keys added since the hand-kept arrays: a select's schema default (what a form shows when the
// field is left out) and a body's typed-JSON mode. The rest must be what they said.
const asBefore = (fields: readonly object[]) => fields.map(({ default: _d, jsonMode: _j, ...f }: { default?: unknown; jsonMode?: unknown }) => f);

describe("fields generated from the config schemas", () => {
  test.each(Object.keys(before.triggers))("trigger %s has the fields it had by hand", (type) => {
    expect(asBefore(triggerRegistry.get(type)!.fields)).toEqual(before.triggers[type]);
  });

  test.each(Object.keys(before.actions))("action %s has the fields it had by hand", (type) => {
    expect(asBefore(actionRegistry.get(type)!.fields)).toEqual(before.actions[type]);
  });

  test("a select shows the value its schema fills in when left out: the http method (and the alert channel's) is POST, as sent", async () => {
    const method = actionRegistry.get("http")!.fields.find((f) => f.name === "method")!;
    expect(method.default).toBe("POST");
    const { defaultOf } = await import("@/components/AlertChannelFields");
    expect(defaultOf({ ...actionRegistry.get("http")!, available: true }, "method")).toBe("POST");
    // What the schema fills in for a config without the field is what the form showed.
    expect(actionRegistry.get("http")!.configSchema.parse({ url: "https://example.com" })).toMatchObject({ method: "POST" });
  });
});

describe("fieldsOf", () => {
  test("a key without field metadata is not a form field, the order is the schema's, and refinements keep the metadata", async () => {
    const { z } = await import("zod");
    const { field, fieldsOf } = await import("@/lib/plugin");
    const schema = z
      .strictObject({
        b: field(z.string().optional(), { label: "B", kind: "text" }),
        hidden: z.string().optional(),
        a: field(z.string().min(1), { label: "A", kind: "cron", required: true }).refine((v) => v !== "x"),
      })
      .superRefine(() => {});
    expect(fieldsOf(schema)).toEqual([
      { name: "b", label: "B", kind: "text" },
      { name: "a", label: "A", kind: "cron", required: true },
    ]);
    expect(() => fieldsOf(z.string())).toThrow(/must be an object schema/);
  });
});

describe("a webhook's Who may call it", () => {
  test("says one preset's help at a time: the chosen one's, or the default's, never every preset's at once", () => {
    const verify = triggerRegistry.get("webhook")!.fields.find((f) => f.name === "verify")!;
    expect(verify.help).toMatch(/^\(default\) checks nothing beyond the URL's secret token/);
    for (const other of ["X-Hub-Signature-256", "Stripe-Signature", "X-Slack-Signature", "Authorization"]) expect(verify.help).not.toContain(other);
    const help = Object.fromEntries((verify.options ?? []).map((o) => [o.value, o.help ?? ""]));
    expect(help.github).toContain("X-Hub-Signature-256");
    expect(help.github).not.toContain("Stripe-Signature");
    expect(help.stripe).toContain("Stripe-Signature");
    expect(Object.values(help).every((h) => h.length > 0)).toBe(true);
  });
});

describe("plug-in icons", () => {
  test("every trigger and action has a drawn icon (Telegram's card showed a clipped text badge)", () => {
    const missing = [
      ...[...triggerRegistry.keys()].map((t) => `trigger:${t}`),
      ...[...actionRegistry.keys()].map((a) => `action:${a}`),
    ].filter((k) => !PLUGIN_ICON_PATHS[k]?.length);
    expect(missing).toEqual([]);
  });
});
