import { emailTrigger } from "./email";
import { pollTrigger } from "./poll";
import { rssTrigger } from "./rss";
import { scheduleTrigger } from "./schedule";
import type { TriggerPlugin } from "./types";
import { webhookTrigger } from "./webhook";

/**
 * The trigger registry: an explicit list, one plug-in per file. A duplicate type throws at start-up.
 * Add a plug-in by importing it and appending it to `plugins`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each plug-in has its own config type
const plugins: TriggerPlugin<any>[] = [webhookTrigger, scheduleTrigger, rssTrigger, emailTrigger, pollTrigger];

export const triggerRegistry: ReadonlyMap<string, TriggerPlugin> = buildRegistry(plugins as TriggerPlugin[]);

function buildRegistry(list: TriggerPlugin[]): Map<string, TriggerPlugin> {
  const map = new Map<string, TriggerPlugin>();
  for (const p of list) {
    if (map.has(p.type)) throw new Error(`triggers: duplicate trigger type "${p.type}"`);
    map.set(p.type, p);
  }
  return map;
}

export function getTrigger(type: string): TriggerPlugin {
  const p = triggerRegistry.get(type);
  if (!p) throw new Error(`triggers: unknown trigger type "${type}"`);
  return p;
}

export const POLLED_TRIGGERS = ["schedule", "rss", "poll"] as const;
