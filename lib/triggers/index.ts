import { nextRunAfter } from "@whenthen/schedules";
import { fieldsOf, type FieldMeta } from "../plugin";
import { emailTrigger } from "./email";
import { imapTrigger } from "./imap";
import { mqttTrigger } from "./mqtt";
import { pollTrigger } from "./poll";
import { rssTrigger } from "./rss";
import { scheduleTrigger } from "./schedule";
import type { ListenTrigger, MailTrigger, PolledTrigger, RequestTrigger, TriggerPlugin, TriggerState } from "./types";
import { webhookTrigger } from "./webhook";

/**
 * The trigger registry: an explicit list, one plug-in per file. A duplicate type throws at start-up.
 * Add a plug-in by importing it and appending it to `plugins`: how it is fed (`feed`), its timing,
 * its request or message handling and its URL fields are the plug-in's, and every list of trigger
 * types (the TriggerType union, the polled types, an event's source) is derived from this one.
 */
const plugins = [webhookTrigger, scheduleTrigger, rssTrigger, emailTrigger, pollTrigger, imapTrigger, mqttTrigger] as const;

export type TriggerType = (typeof plugins)[number]["type"];

/** A registered trigger: the plug-in with its editor fields generated from its config schema. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each plug-in has its own config type
export type RegisteredTrigger = TriggerPlugin<any, TriggerType> & { fields: FieldMeta[] };

export const triggerRegistry: ReadonlyMap<string, RegisteredTrigger> = buildRegistry(plugins);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see RegisteredTrigger
function buildRegistry(list: readonly TriggerPlugin<any, TriggerType>[]): Map<string, RegisteredTrigger> {
  const map = new Map<string, RegisteredTrigger>();
  for (const p of list) {
    if (map.has(p.type)) throw new Error(`triggers: duplicate trigger type "${p.type}"`);
    map.set(p.type, { ...p, fields: fieldsOf(p.configSchema) } as RegisteredTrigger);
  }
  return map;
}

export function getTrigger(type: string): RegisteredTrigger {
  const p = triggerRegistry.get(type);
  if (!p) throw new Error(`triggers: unknown trigger type "${type}"`);
  return p;
}

const ofFeed = <F extends RegisteredTrigger["feed"]>(feed: F) =>
  [...triggerRegistry.values()].filter((p): p is Extract<RegisteredTrigger, { feed: F }> => p.feed === feed);

/** Types the scheduler polls (schedule, rss, poll today). */
export const POLLED_TRIGGERS: readonly TriggerType[] = ofFeed("polled").map((p) => p.type);
/** Types the SMTP receiver routes mail to. */
export const MAIL_TRIGGERS: readonly TriggerType[] = ofFeed("mail").map((p) => p.type);
/** Types a worker holds a connection open for (lib/listeners). */
export const LISTEN_TRIGGERS: readonly TriggerType[] = ofFeed("listen").map((p) => p.type);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see RegisteredTrigger
export type RegisteredPolled = PolledTrigger<any, TriggerType> & { fields: FieldMeta[] };
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see RegisteredTrigger
export type RegisteredRequest = RequestTrigger<any, TriggerType> & { fields: FieldMeta[] };
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see RegisteredTrigger
export type RegisteredMail = MailTrigger<any, TriggerType> & { fields: FieldMeta[] };
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see RegisteredTrigger
export type RegisteredListen = ListenTrigger<any, TriggerType> & { fields: FieldMeta[] };

/** The plug-in of this type fed by a held connection, or null. */
export function listenTrigger(type: string): RegisteredListen | null {
  const p = triggerRegistry.get(type);
  return p?.feed === "listen" ? p : null;
}

/** The polled plug-in of this type, or null (unknown, or fed some other way). */
export function polledTrigger(type: string): RegisteredPolled | null {
  const p = triggerRegistry.get(type);
  return p?.feed === "polled" ? p : null;
}

export const isPolledType = (type: string): type is TriggerType => polledTrigger(type) !== null;

/**
 * The next time to poll after `from`: the plug-in's timing, anchored on the stored next_run_at
 * (an interval keeps its phase; a cron expression ignores the anchor). The reconciler's claim
 * computes the same from the same timing, so next_run_at has one source.
 */
export function nextRunOf(plugin: Pick<RegisteredPolled, "timing">, config: unknown, from: Date, state: TriggerState): Date {
  return nextRunAfter({ ...plugin.timing(config, state), nextRunAt: state.nextRunAt ? new Date(state.nextRunAt) : undefined }, from);
}

/** When a newly saved, enabled or adopted applet first runs: now, or its first slot after now. */
export function firstRunOf(plugin: RegisteredPolled, config: unknown, now: Date, state: TriggerState): Date {
  return plugin.firstRun === "nextSlot" ? nextRunOf(plugin, config, now, state) : now;
}
