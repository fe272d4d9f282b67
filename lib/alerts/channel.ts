import { z } from "zod";
import { actionRegistry } from "../actions";
import type { Problem } from "../definition";
import { checkUrlForSave } from "../net/safe-fetch";
import { CHANNEL_TYPES, type AlertChannel, type ChannelType } from "./policy";
import { MESSAGE_FIELDS } from "./fields";
import type { AlertMessage } from "./message";

export { MESSAGE_FIELDS };

/** The message fields of `type` filled from `msg` (the http body is the alert as JSON). */
export function messageFields(type: ChannelType, msg: AlertMessage, facts: Record<string, unknown>, config: Record<string, unknown>): Record<string, unknown> {
  switch (type) {
    case "email":
      return { subject: msg.title, body_markdown: msg.text.split("\n").join("\n\n") };
    case "slack":
      return { text: `*${msg.title}*\n${msg.text}` };
    case "discord":
      return { content: `**${msg.title}**\n${msg.text}` };
    case "push":
      return { title: msg.title, message: msg.text, ...(config.provider === "pushover" ? { url: config.url ?? msg.link } : { click: config.click ?? msg.link }) };
    case "http":
      return { body: { title: msg.title, text: msg.text, link: msg.link, ...facts } };
    case "homeassistant":
      return { data: { title: msg.title, message: msg.text } };
    case "matrix":
      return { text: `${msg.title}\n${msg.text}` };
    case "gotify":
      return { title: msg.title, message: msg.text };
  }
}

const channelShape = z.strictObject({
  type: z.enum(CHANNEL_TYPES, { error: `type must be one of: ${CHANNEL_TYPES.join(", ")}` }),
  config: z.record(z.string(), z.unknown(), { error: "config must be an object" }).default({}),
});

const SAMPLE: AlertMessage = { title: "whenthen: test", text: "test", link: "https://example.com/runs/x" };

/**
 * A channel as entered in Settings (or for one applet), checked by its plug-in's own config schema
 * with the message fields filled in: every problem with its path under `prefix` (`channel.config.webhook_url`).
 * URL fields that are not templates are checked as the editor checks them on save.
 */
export function checkChannel(raw: unknown, prefix: string, allowPrivateUrls: boolean): { ok: true; channel: AlertChannel } | { ok: false; problems: Problem[] } {
  const at = (p: (string | number)[]) => [prefix, ...p.map(String)].filter(Boolean).join(".");
  const shape = channelShape.safeParse(raw);
  if (!shape.success) return { ok: false, problems: shape.error.issues.map((i) => ({ path: at(i.path as (string | number)[]), message: i.message })) };
  const { type, config } = shape.data;
  const problems: Problem[] = [];
  for (const key of MESSAGE_FIELDS[type]) {
    if (key in config) problems.push({ path: at(["config", key]), message: `${key} is written by whenthen for each alert; leave it out` });
  }
  const plugin = actionRegistry.get(type)!;
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
