import type { App } from "../app";
import type { Applet } from "../db/store/types";
import { controlsWarnings, isDefaultControls, type RunControls } from "../definition/controls";
import { storedDefinition, type Definition } from "../definition";

/**
 * Controls over runs as the applet page and the API show them: the applet's settings (they live in
 * its definition, `controls`, so they are versioned, exported and imported with it), and warnings
 * checked against its latest event (a concurrency key that renders empty for it).
 */
export async function controlsView(app: Pick<App, "store">, a: Applet) {
  const controls = storedDefinition(a.definition).controls ?? {};
  const sample = (await app.store.runs.recentEvents(a.id, 1))[0]?.payload;
  return { controls, default: isDefaultControls(controls), warnings: controlsWarnings(controls, sample) };
}

/** The definition with these controls (none kept when they are the default: today's behaviour needs no key). */
export function withControls(definition: Definition, controls: RunControls): Definition {
  const { controls: _old, ...rest } = storedDefinition(definition);
  return isDefaultControls(controls) ? rest : { ...rest, controls };
}
