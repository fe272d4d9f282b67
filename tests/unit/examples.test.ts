import { describe, expect, it } from "vitest";
import { APPLET_EXAMPLES, exampleByKey } from "@/lib/applets/examples";
import { checkDefinition } from "@/lib/definition";
import { triggerRegistry } from "@/lib/triggers";
import { renderConfig } from "@/lib/template";

/** Onboarding: the ready examples (the seed's too) are valid, one per trigger type, laptop-only. */
describe("the ready examples", () => {
  it("every trigger type has an example, each with a unique key", () => {
    expect(new Set(APPLET_EXAMPLES.map((e) => e.key)).size).toBe(APPLET_EXAMPLES.length);
    expect([...new Set(APPLET_EXAMPLES.map((e) => e.triggerType))].sort()).toEqual([...triggerRegistry.keys()].sort());
  });

  it("the mailbox, broker and home actions each have an example to start from", () => {
    const used = new Set(APPLET_EXAMPLES.flatMap((e) => (e.definition({ inboundDomain: "localhost" }) as { actions: { type: string }[] }).actions.map((a) => a.type)));
    for (const type of ["mqtt", "homeassistant", "matrix", "gotify"]) expect(used, type).toContain(type);
  });

  it("the actions of the examples for a mailbox or a broker render against their trigger's sample without a warning", () => {
    for (const e of APPLET_EXAMPLES.filter((x) => x.triggerType === "imap" || x.triggerType === "mqtt")) {
      const def = e.definition({ inboundDomain: "localhost" }) as { actions: { config: Record<string, unknown> }[] };
      const sample = triggerRegistry.get(e.triggerType)!.sample;
      for (const a of def.actions) expect(renderConfig(a.config, { trigger: sample, now_local: "2026-03-07T19:30:00+01:00", secrets: () => "x" }).warnings, e.key).toEqual([]);
    }
  });

  it("an example that needs a secret names each one in its description", () => {
    for (const e of APPLET_EXAMPLES) {
      for (const [, name] of JSON.stringify(e.definition({ inboundDomain: "localhost" })).matchAll(/secrets\.([A-Z0-9_]+)/g)) expect(e.description, e.key).toContain(name);
    }
  });

  it("every example passes checkDefinition, and its trigger is the type it says", () => {
    for (const e of APPLET_EXAMPLES) {
      const checked = checkDefinition(e.definition({ inboundDomain: "localhost" }));
      expect(checked.ok ? [] : checked.problems, e.key).toEqual([]);
      if (checked.ok) expect(checked.definition.trigger.type, e.key).toBe(e.triggerType);
    }
  });

  it("the first five examples use only what works on a laptop: notes and email (the outbox), no secrets", () => {
    for (const e of APPLET_EXAMPLES.slice(0, 5)) {
      const def = e.definition({ inboundDomain: "localhost" }) as { actions: { type: string }[] };
      for (const a of def.actions) expect(["note", "email"], `${e.key}: ${a.type}`).toContain(a.type);
      expect(JSON.stringify(def), e.key).not.toContain("secrets.");
    }
    expect(exampleByKey("webhook-to-note")?.triggerType).toBe("webhook");
    expect(exampleByKey("nope")).toBeUndefined();
  });
});
