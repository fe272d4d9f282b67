import type { ExampleCard } from "@/components/ExampleApplets";
import { APPLET_EXAMPLES } from "./examples";

/** The ready examples as the empty applets list shows them: what each is, and its trigger and action types for the icons. */
export function exampleCards(inboundDomain: string): ExampleCard[] {
  return APPLET_EXAMPLES.map((e) => {
    const def = e.definition({ inboundDomain }) as { actions?: { type?: unknown }[] };
    return { key: e.key, triggerType: e.triggerType, actionTypes: (def.actions ?? []).map((a) => String(a.type)), name: e.name, description: e.description };
  });
}
