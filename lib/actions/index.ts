import { fieldsOf, type FieldMeta } from "../plugin";
import { emailAction } from "./email";
import { discordAction } from "./discord";
import { httpAction } from "./http";
import { gotifyAction } from "./gotify";
import { homeAssistantAction } from "./homeassistant";
import { matrixAction } from "./matrix";
import { mqttAction } from "./mqtt";
import { noteAction } from "./note";
import { pushAction } from "./push";
import { sheetsAction } from "./sheets";
import { slackAction } from "./slack";
import { telegramAction } from "./telegram";
import type { ActionPlugin } from "./types";

/**
 * The action registry: an explicit list, one plug-in per file. A duplicate type throws at start-up.
 * Add a plug-in by importing it and appending it to `plugins`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each plug-in has its own config type
const plugins: ActionPlugin<any>[] = [httpAction, emailAction, slackAction, discordAction, sheetsAction, noteAction, pushAction, telegramAction, mqttAction, homeAssistantAction, matrixAction, gotifyAction];

/** A registered action: the plug-in with its editor fields generated from its config schema. */
export type RegisteredAction = ActionPlugin & { fields: FieldMeta[] };

export const actionRegistry: ReadonlyMap<string, RegisteredAction> = buildRegistry(plugins);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see `plugins`
function buildRegistry(list: readonly ActionPlugin<any>[]): Map<string, RegisteredAction> {
  const map = new Map<string, RegisteredAction>();
  for (const p of list) {
    if (map.has(p.type)) throw new Error(`actions: duplicate action type "${p.type}"`);
    map.set(p.type, { ...(p as ActionPlugin), fields: fieldsOf(p.configSchema) });
  }
  return map;
}
