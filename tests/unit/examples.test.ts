import { describe, expect, it } from "vitest";
import { APPLET_EXAMPLES, exampleByKey } from "@/lib/applets/examples";
import { checkDefinition } from "@/lib/definition";
import { triggerRegistry } from "@/lib/triggers";

/** #20 onboarding: the ready examples (the seed's too) are valid, one per trigger type, laptop-only. */
describe("#20: the ready examples", () => {
  it("#20: one example per trigger type, each with a unique key", () => {
    expect(APPLET_EXAMPLES).toHaveLength(5);
    expect(new Set(APPLET_EXAMPLES.map((e) => e.key)).size).toBe(5);
    expect(APPLET_EXAMPLES.map((e) => e.triggerType).sort()).toEqual([...triggerRegistry.keys()].sort());
  });

  it("#20: every example passes checkDefinition, and its trigger is the type it says", () => {
    for (const e of APPLET_EXAMPLES) {
      const checked = checkDefinition(e.definition({ inboundDomain: "localhost" }));
      expect(checked.ok ? [] : checked.problems, e.key).toEqual([]);
      if (checked.ok) expect(checked.definition.trigger.type, e.key).toBe(e.triggerType);
    }
  });

  it("#20: the examples use only what works on a laptop: notes and email (the outbox), no secrets", () => {
    for (const e of APPLET_EXAMPLES) {
      const def = e.definition({ inboundDomain: "localhost" }) as { actions: { type: string }[] };
      for (const a of def.actions) expect(["note", "email"], `${e.key}: ${a.type}`).toContain(a.type);
      expect(JSON.stringify(def), e.key).not.toContain("secrets.");
    }
    expect(exampleByKey("webhook-to-note")?.triggerType).toBe("webhook");
    expect(exampleByKey("nope")).toBeUndefined();
  });
});
