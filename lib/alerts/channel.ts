import { z } from "zod";
import { actionRegistry, type RegisteredAction } from "../actions";
import type { AlertChannelSpec } from "../actions/types";
import type { Problem } from "../definition";
import { checkUrlForSave } from "../net/safe-fetch";
import type { AlertChannel } from "./policy";
import type { AlertMessage } from "./message";

/** An action that can carry failure alerts: one that declares `alert` (lib/actions/types.ts). */
export type ChannelAction = RegisteredAction & { alert: AlertChannelSpec };

/** The actions offered as alert channels, in the registry's order: every one that declares `alert`. */
export function channelActions(): ChannelAction[] {
  return [...actionRegistry.values()].filter((a): a is ChannelAction => a.alert !== undefined);
}

/** The types an alert channel may have. */
export const channelTypes = (): string[] => channelActions().map((a) => a.type);

const channelAction = (type: string): ChannelAction | undefined => {
  const a = actionRegistry.get(type);
  return a?.alert ? (a as ChannelAction) : undefined;
};

/**
 * The message fields of a channel of `type` filled from `msg`, to merge over its (rendered)
 * config; `facts` identify the alert (the http body carries them).
 */
export function messageFields(type: string, msg: AlertMessage, facts: Record<string, unknown>, config: Record<string, unknown>): Record<string, unknown> {
  const action = channelAction(type);
  if (!action) throw new Error(`alerts: "${type}" is not an alert channel`);
  return action.alert.fill({ ...msg, facts }, config);
}

const channelShape = () => {
  const types = channelTypes();
  const error = `type must be one of: ${types.join(", ")}`;
  return z.strictObject({
    type: z.string({ error }).refine((t) => types.includes(t), { error }),
    config: z.record(z.string(), z.unknown(), { error: "config must be an object" }).default({}),
  });
};

const SAMPLE: AlertMessage = { title: "whenthen: test", text: "test", link: "https://example.com/runs/x" };

/**
 * A channel as entered in Settings (or for one applet), checked by its plug-in's own config schema
 * with the message fields filled in: every problem with its path under `prefix` (`channel.config.webhook_url`).
 * The type must be an action that declares `alert`. URL fields that are not templates are checked
 * as the editor checks them on save.
 */
export function checkChannel(raw: unknown, prefix: string, allowPrivateUrls: boolean): { ok: true; channel: AlertChannel } | { ok: false; problems: Problem[] } {
  const at = (p: (string | number)[]) => [prefix, ...p.map(String)].filter(Boolean).join(".");
  const shape = channelShape().safeParse(raw);
  if (!shape.success) return { ok: false, problems: shape.error.issues.map((i) => ({ path: at(i.path as (string | number)[]), message: i.message })) };
  const { type, config } = shape.data;
  const plugin = channelAction(type)!;
  const problems: Problem[] = [];
  for (const key of plugin.alert.messageFields) {
    if (key in config) problems.push({ path: at(["config", key]), message: `${key} is written by whenthen for each alert; leave it out` });
  }
  const parsed = plugin.configSchema.safeParse({ ...config, ...messageFields(type, SAMPLE, {}, config) });
  if (!parsed.success) problems.push(...parsed.error.issues.map((i) => ({ path: at(["config", ...(i.path as (string | number)[])]), message: i.message })));
  for (const key of plugin.urlFields ?? []) {
    const value = config[key];
    if (typeof value !== "string" || value.includes("{{")) continue;
    const problem = checkUrlForSave(value, allowPrivateUrls);
    if (problem) problems.push({ path: at(["config", key]), message: problem });
  }
  return problems.length ? { ok: false, problems } : { ok: true, channel: { type, config } };
}
