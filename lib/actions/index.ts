import { fieldsOf, type FieldMeta, type PluginContext } from "../plugin";
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
const plugins = [
  httpAction,
  emailAction,
  slackAction,
  discordAction,
  sheetsAction,
  noteAction,
  pushAction,
  telegramAction,
  mqttAction,
  homeAssistantAction,
  matrixAction,
  gotifyAction,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each plug-in has its own config type
] as const satisfies readonly ActionPlugin<any, object>[];

type FactsOf<P> = P extends { facts?(ctx: never): infer F } ? F : never;
type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
/** Every registered plug-in's `facts`, as one object: GET /api/meta's install facts, typed from the list above. */
export type ActionFacts = Intersection<FactsOf<(typeof plugins)[number]>>;

/** A registered action: the plug-in with its editor fields generated from its config schema. */
export type RegisteredAction = ActionPlugin & { fields: FieldMeta[] };

export const actionRegistry: ReadonlyMap<string, RegisteredAction> = registryOf(plugins);

/**
 * What the registered plug-ins tell about this install (their `facts`), merged; a key two
 * plug-ins tell throws. `registry`: a test's own (one with a plug-in more).
 */
export function actionFacts(ctx: Pick<PluginContext, "config">, registry: ReadonlyMap<string, RegisteredAction> = actionRegistry): ActionFacts {
  const out: Record<string, unknown> = {};
  const by = new Map<string, string>();
  for (const a of registry.values()) {
    for (const [key, value] of Object.entries(a.facts?.(ctx) ?? {})) {
      if (by.has(key)) throw new Error(`actions: "${a.type}" and "${by.get(key)}" both report the install fact "${key}"`);
      by.set(key, a.type);
      out[key] = value;
    }
  }
  return out as ActionFacts;
}

/** A registry of these plug-ins, each with its form fields; a duplicate type throws. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see `plugins`
export function registryOf(list: readonly ActionPlugin<any, object>[]): Map<string, RegisteredAction> {
  const map = new Map<string, RegisteredAction>();
  for (const p of list) {
    if (map.has(p.type)) throw new Error(`actions: duplicate action type "${p.type}"`);
    map.set(p.type, { ...(p as ActionPlugin), fields: fieldsOf(p.configSchema) });
  }
  return map;
}
