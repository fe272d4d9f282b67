import { looseActions } from "../definition/loose";
import { APPLET_EXAMPLES } from "./examples";

/** One ready example as the empty applets list shows it (components/ExampleApplets.tsx). */
export interface ExampleCard {
  key: string;
  triggerType: string;
  actionTypes: string[];
  name: string;
  description: string;
}

/** The ready examples as the empty applets list shows them: what each is, and its trigger and action types for the icons. */
export function exampleCards(inboundDomain: string): ExampleCard[] {
  return APPLET_EXAMPLES.map((e) => {
    return { key: e.key, triggerType: e.triggerType, actionTypes: looseActions(e.definition({ inboundDomain })).map((a) => a.type), name: e.name, description: e.description };
  });
}
