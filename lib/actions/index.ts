import { emailAction } from "./email";
import { discordAction } from "./discord";
import { httpAction } from "./http";
import { noteAction } from "./note";
import { pushAction } from "./push";
import { sheetsAction } from "./sheets";
import { slackAction } from "./slack";
import type { ActionPlugin } from "./types";

/**
 * The action registry: an explicit list, one plug-in per file. A duplicate type throws at start-up.
 * Add a plug-in by importing it and appending it to `plugins`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each plug-in has its own config type
const plugins: ActionPlugin<any>[] = [httpAction, emailAction, slackAction, discordAction, sheetsAction, noteAction, pushAction];

export const actionRegistry: ReadonlyMap<string, ActionPlugin> = buildRegistry(plugins as ActionPlugin[]);

function buildRegistry(list: ActionPlugin[]): Map<string, ActionPlugin> {
  const map = new Map<string, ActionPlugin>();
  for (const p of list) {
    if (map.has(p.type)) throw new Error(`actions: duplicate action type "${p.type}"`);
    map.set(p.type, p);
  }
  return map;
}

export function getAction(type: string): ActionPlugin {
  const p = actionRegistry.get(type);
  if (!p) throw new Error(`actions: unknown action type "${type}"`);
  return p;
}
