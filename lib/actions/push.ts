import { z } from "zod";
import { field } from "../plugin";
import { ActionError } from "../core/errors";
import type { SafeResponse } from "../net/types";
import {
  hasTemplate,
  isSuccess,
  parseJsonObject,
  requireHttpUrl,
  requireRendered,
  requiredText,
  resolveInt,
  statusError,
  templatableInt,
  urlField,
} from "./common";
import { APPROVE_LABEL, DENY_LABEL, approvalButtonsField, approvalLinks, type ApprovalLinks } from "./approval";
import type { ActionContext, ActionPlugin } from "./types";

/**
 * A push notification to a phone through ntfy (https://docs.ntfy.sh/publish/#publish-as-json; a
 * self-hosted server works with no account) or Pushover (https://pushover.net/api).
 *
 * One flat config for both providers: the editor hides the other provider's fields (`showWhen`)
 * but may keep their values when the user switches, and a strict per-provider schema would then
 * refuse the applet. Fields of the provider not chosen are ignored.
 */

export const PUSHOVER_URL = "https://api.pushover.net/1/messages.json";
export const NTFY_MESSAGE_BYTES = 4096;
export const PUSHOVER_MESSAGE_CHARS = 1024;
export const TITLE_CHARS = 250;
/** ntfy topic names (https://docs.ntfy.sh/publish/): what its server accepts. */
const NTFY_TOPIC = /^[-_A-Za-z0-9]{1,64}$/;
/** Pushover emergency priority (2) requires these: repeat every 60 s, for at most an hour, until acknowledged. */
const PUSHOVER_EMERGENCY = { retry: "60", expire: "3600" };

const PRIORITY_RANGE = { ntfy: [1, 5], pushover: [-2, 2] } as const;

const ntfyOnly = { field: "provider", equals: ["ntfy"] };
const pushoverOnly = { field: "provider", equals: ["pushover"] };

/** Keys in the order the editor shows them: the provider, its own fields, then the message. */
export const pushConfigSchema = z
  .strictObject({
    provider: field(z.enum(["ntfy", "pushover"], { error: 'push: "provider" must be "ntfy" or "pushover"' }), {
      label: "Provider",
      kind: "select",
      required: true,
      options: [
        { value: "ntfy", label: "ntfy" },
        { value: "pushover", label: "Pushover" },
      ],
    }),
    // ntfy
    server: field(urlField("push", "server", { optional: true }), {
      label: "ntfy server",
      kind: "text",
      template: true,
      showWhen: ntfyOnly,
      placeholder: "https://ntfy.sh",
      help: "Empty: NTFY_SERVER (default https://ntfy.sh). Your own server works too.",
    }),
    topic: field(z.string().optional(), {
      label: "Topic",
      kind: "text",
      required: true,
      template: true,
      showWhen: ntfyOnly,
      help: "Letters, digits, - and _. On ntfy.sh anyone who knows the topic can read it: pick something hard to guess.",
    }),
    token: field(z.string().optional(), {
      label: "Access token",
      kind: "secret",
      template: true,
      showWhen: ntfyOnly,
      help: "Optional. Empty: NTFY_TOKEN, which is only sent to the NTFY_SERVER server.",
    }),
    // Pushover
    user_key: field(z.string().optional(), {
      label: "User key",
      kind: "secret",
      template: true,
      showWhen: pushoverOnly,
      help: "Empty: PUSHOVER_USER_KEY.",
    }),
    app_token: field(z.string().optional(), {
      label: "Application token",
      kind: "secret",
      template: true,
      showWhen: pushoverOnly,
      help: "Empty: PUSHOVER_APP_TOKEN.",
    }),
    // both providers
    title: field(z.string().optional(), { label: "Title", kind: "text", template: true, help: "Optional; at most 250 characters." }),
    message: field(requiredText("push", "message"), {
      label: "Message",
      kind: "textarea",
      required: true,
      template: true,
      help: "Cut to the provider's limit (ntfy 4,096 bytes, Pushover 1,024 characters), with a warning on the run.",
    }),
    priority: field(templatableInt("push", "priority", Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY), {
      label: "Priority",
      kind: "text",
      template: true,
      help: "ntfy: 1 (min) to 5 (urgent), default 3. Pushover: -2 (silent) to 2 (emergency: repeats every minute for up to an hour until acknowledged), default 0.",
    }),
    // ntfy
    click: field(urlField("push", "click", { optional: true }), { label: "Click URL", kind: "text", template: true, showWhen: ntfyOnly, help: "Opened when the notification is tapped." }),
    tags: field(z.union([z.string(), z.array(z.string())]).optional(), { label: "Tags", kind: "text", template: true, showWhen: ntfyOnly, help: "Comma separated; emoji short codes such as warning or tada show as icons." }),
    // Pushover
    url: field(urlField("push", "url", { optional: true }), { label: "URL", kind: "text", template: true, showWhen: pushoverOnly, help: "A link shown under the message." }),
    // ntfy
    approval_buttons: approvalButtonsField(ntfyOnly),
  })
  .superRefine((c, ctx) => {
    const [min, max] = PRIORITY_RANGE[c.provider];
    if (typeof c.priority === "number" && (c.priority < min || c.priority > max)) {
      ctx.addIssue({
        code: "custom",
        path: ["priority"],
        message: `push: "priority" for ${c.provider} must be from ${min} to ${max}, got ${c.priority}`,
      });
    }
    if (c.provider === "ntfy") {
      const topic = c.topic?.trim() ?? "";
      if (topic === "") ctx.addIssue({ code: "custom", path: ["topic"], message: 'push: "topic" is required for ntfy' });
      else if (!hasTemplate(topic) && !NTFY_TOPIC.test(topic)) {
        ctx.addIssue({ code: "custom", path: ["topic"], message: topicMessage(topic) });
      }
    }
  });

export type PushConfig = z.output<typeof pushConfigSchema>;

const topicMessage = (topic: string) =>
  `push: ntfy "topic" may use only letters, digits, - and _ (at most 64), got ${JSON.stringify(topic.slice(0, 80))}`;


export const pushAction: ActionPlugin<PushConfig> = {
  type: "push",
  label: "Push notification",
  description: "Send a notification to your phone with ntfy (no account needed) or Pushover.",
  configSchema: pushConfigSchema,
  alert: {
    label: "Push (ntfy / Pushover)",
    messageFields: ["title", "message"],
    // The notification opens the run unless the channel names its own link.
    fill: (msg, config) => ({ title: msg.title, message: msg.text, ...(config.provider === "pushover" ? { url: config.url ?? msg.link } : { click: config.click ?? msg.link }) }),
  },
  exampleConfig: { provider: "ntfy", server: "https://ntfy.sh", topic: "whenthen-example-topic", message: "New order: {{trigger.body.title}}" },
  typedConfig: ["tags", "priority"],

  async run(config, ctx) {
    return config.provider === "pushover" ? sendPushover(config, ctx) : sendNtfy(config, ctx);
  },
};

async function sendNtfy(config: PushConfig, ctx: ActionContext) {
  const customServer = config.server?.trim();
  const server = requireHttpUrl("push", "server", customServer || ctx.config.ntfyServer).replace(/\/+$/, "");
  const topic = requireRendered("push", "topic", config.topic).trim();
  if (!NTFY_TOPIC.test(topic)) throw new ActionError(topicMessage(topic), { retryable: false });
  // NTFY_TOKEN belongs to NTFY_SERVER: never hand it to another server named in an applet.
  const defaultToken = !customServer || customServer.replace(/\/+$/, "") === ctx.config.ntfyServer ? ctx.config.ntfyToken : undefined;
  const token = config.token?.trim() || defaultToken;
  const tags = (Array.isArray(config.tags) ? config.tags : (config.tags ?? "").split(","))
    .map((t) => t.trim())
    .filter((t) => t !== "");
  const click = config.click?.trim() ? requireHttpUrl("push", "click", config.click) : undefined;
  const links = config.approval_buttons ? approvalLinks("push", ctx) : null;

  const body = {
    topic,
    message: truncateBytes(requireRendered("push", "message", config.message), NTFY_MESSAGE_BYTES, "ntfy", ctx),
    ...(config.title?.trim() ? { title: truncateTitle(config.title, ctx) } : {}),
    ...optional("priority", resolveInt("push", "priority", config.priority, ...PRIORITY_RANGE.ntfy)),
    ...(tags.length ? { tags } : {}),
    ...optional("click", click),
    ...(links ? { actions: approvalActions(links) } : {}),
  };
  const res = await ctx.http(`${server}/`, {
    // NTFY_SERVER is the operator's own setting, often a ntfy on the LAN: the private-address
    // guard is for URLs written into applets, so only a server named in the applet goes through it.
    ...(customServer ? {} : { allowPrivate: true }),
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!isSuccess(res.status)) throw statusError("push", res, ctx.clock, providerDetail("ntfy", res));
  const answer = parseJsonObject(res);
  return { output: { provider: "ntfy", status: res.status, id: typeof answer?.id === "string" ? answer.id : null } };
}

async function sendPushover(config: PushConfig, ctx: ActionContext) {
  const token = config.app_token?.trim() || ctx.config.pushoverAppToken;
  const user = config.user_key?.trim() || ctx.config.pushoverUserKey;
  if (!token) throw new ActionError('push: Pushover needs "app_token" (or PUSHOVER_APP_TOKEN in the environment)', { retryable: false });
  if (!user) throw new ActionError('push: Pushover needs "user_key" (or PUSHOVER_USER_KEY in the environment)', { retryable: false });
  const priority = resolveInt("push", "priority", config.priority, ...PRIORITY_RANGE.pushover);
  const url = config.url?.trim() ? requireHttpUrl("push", "url", config.url) : undefined;

  const form = new URLSearchParams({
    token,
    user,
    message: truncateChars(requireRendered("push", "message", config.message), PUSHOVER_MESSAGE_CHARS, "Pushover", ctx),
  });
  if (config.title?.trim()) form.set("title", truncateTitle(config.title, ctx));
  if (priority !== undefined) form.set("priority", String(priority));
  if (priority === 2) {
    form.set("retry", PUSHOVER_EMERGENCY.retry);
    form.set("expire", PUSHOVER_EMERGENCY.expire);
  }
  if (url) form.set("url", url);

  const res = await ctx.http(PUSHOVER_URL, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form.toString(),
  });
  if (!isSuccess(res.status)) throw statusError("push", res, ctx.clock, providerDetail("Pushover", res));
  const answer = parseJsonObject(res);
  return { output: { provider: "pushover", status: res.status, request: typeof answer?.request === "string" ? answer.request : null } };
}

/** "view" actions (https://docs.ntfy.sh/publish/#open-websiteapp): each opens the approval page, which decides; `clear` dismisses the notification. */
export function approvalActions(links: ApprovalLinks): { action: "view"; label: string; url: string; clear: true }[] {
  return [
    { action: "view", label: APPROVE_LABEL, url: links.approve_url, clear: true },
    { action: "view", label: DENY_LABEL, url: links.deny_url, clear: true },
  ];
}

const optional = <K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };

function truncateTitle(title: string, ctx: ActionContext): string {
  const points = Array.from(title.trim());
  if (points.length <= TITLE_CHARS) return title.trim();
  ctx.warn(`push: title cut from ${points.length} to ${TITLE_CHARS} characters`);
  return points.slice(0, TITLE_CHARS - 1).join("") + "…";
}

/** Pushover counts characters (code points); the cut keeps an ellipsis so the reader sees it. */
export function truncateChars(message: string, limit: number, provider: string, ctx: Pick<ActionContext, "warn">): string {
  const points = Array.from(message);
  if (points.length <= limit) return message;
  ctx.warn(`push: message cut from ${points.length} to ${limit} characters (${provider}'s limit)`);
  return points.slice(0, limit - 1).join("") + "…";
}

/** ntfy counts UTF-8 bytes; the cut never splits a multi-byte character. */
export function truncateBytes(message: string, limit: number, provider: string, ctx: Pick<ActionContext, "warn">): string {
  const bytes = Buffer.from(message, "utf8");
  if (bytes.length <= limit) return message;
  const ellipsis = "…";
  let end = limit - Buffer.byteLength(ellipsis);
  // Back up over UTF-8 continuation bytes (10xxxxxx) to the start of a character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  ctx.warn(`push: message cut from ${bytes.length} to ${limit} bytes (${provider}'s limit)`);
  return bytes.subarray(0, end).toString("utf8") + ellipsis;
}

/** ntfy answers `{"error": "..."}`, Pushover `{"errors": ["..."]}`. */
function providerDetail(provider: string, res: SafeResponse): string {
  const body = parseJsonObject(res);
  if (Array.isArray(body?.errors) && body.errors.length) return `${provider}: ${body.errors.map(String).join("; ")}`;
  if (typeof body?.error === "string") return `${provider}: ${body.error}`;
  const text = res.text().trim().slice(0, 300);
  return text ? `${provider}: ${text}` : provider;
}

export default pushAction;
