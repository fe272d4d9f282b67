import { z } from "zod";
import { field } from "../plugin";
import { ActionError } from "../core/errors";
import type { SafeResponse } from "../net/types";
import { chunkMessage } from "./chunk";
import { clampRetryAfter, isSuccess, parseJsonObject, requireHttpUrl, requireRendered, requiredText, statusError, urlField } from "./common";
import type { ActionContext, ActionPlugin } from "./types";

/**
 * Posts to a Discord webhook (https://discord.com/developers/docs/resources/webhook#execute-webhook).
 * Discord caps `content` at 2,000 characters, so long content goes out as several messages, in
 * order, one second apart. Each accepted part is recorded with `saveProgress` before the next is
 * sent, so a retry (after a 429 or a crash) resumes after the last part Discord accepted instead of
 * posting the first parts twice.
 */

export const DISCORD_CONTENT_LIMIT = 2000;
/** Discord refuses usernames longer than this. */
const USERNAME_LIMIT = 80;

export const discordConfigSchema = z.strictObject({
  webhook_url: field(urlField("discord", "webhook_url"), {
      label: "Webhook URL",
      kind: "secret",
      required: true,
      template: true,
      placeholder: "{{secrets.DISCORD_WEBHOOK}}",
      help: "Channel settings → Integrations → Webhooks → Copy Webhook URL. Store it as a secret.",
    }),
  content: field(requiredText("discord", "content"), {
      label: "Message",
      kind: "textarea",
      required: true,
      template: true,
      help: "Discord markdown. Over 2,000 characters it is sent as several messages, split at line breaks, one second apart.",
    }),
  username: field(z.string().optional(), {
      label: "Username",
      kind: "text",
      template: true,
      help: "Optional: overrides the webhook's display name (at most 80 characters).",
    }),
});

export type DiscordConfig = z.output<typeof discordConfigSchema>;

/** What `saveProgress` stores: parts accepted so far out of the total. */
const progressSchema = z.object({ sent: z.number().int().min(0), chunks: z.number().int().min(1) });
export type DiscordProgress = z.output<typeof progressSchema>;

export const discordAction: ActionPlugin<DiscordConfig> = {
  type: "discord",
  label: "Discord message",
  description: "Post a message to a Discord channel through a webhook; long messages are split into parts.",
  configSchema: discordConfigSchema,
  alert: { label: "Discord", messageFields: ["content"], fill: (msg) => ({ content: `**${msg.title}**\n${msg.text}` }) },
  exampleConfig: { webhook_url: "https://discord.com/api/webhooks/000000000000000000/example-token", content: "New order: {{trigger.body.title}}" },

  async run(config, ctx) {
    const url = new URL(requireHttpUrl("discord", "webhook_url", config.webhook_url));
    // wait=true makes Discord confirm the message was created (200 with the message) rather than
    // merely queued (204), and gives us the message id for the run log.
    url.searchParams.set("wait", "true");
    const content = requireRendered("discord", "content", config.content);
    const username = config.username?.trim() ? config.username.trim().slice(0, USERNAME_LIMIT) : undefined;
    if (config.username && config.username.trim().length > USERNAME_LIMIT) {
      ctx.warn(`discord: username cut to ${USERNAME_LIMIT} characters`);
    }

    const chunks = chunkMessage(content, DISCORD_CONTENT_LIMIT);
    const start = resumeAt(ctx, chunks.length);
    const messageIds: string[] = [];

    for (let i = start; i < chunks.length; i++) {
      if (i > start) await ctx.clock.sleep(1000);
      const res = await ctx.http(url.toString(), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(username ? { content: chunks[i], username } : { content: chunks[i] }),
      });
      if (!isSuccess(res.status)) throw partError(res, ctx, i, chunks.length);
      const id = messageId(res);
      if (id) messageIds.push(id);
      await ctx.saveProgress({ sent: i + 1, chunks: chunks.length } satisfies DiscordProgress);
    }

    return {
      output: { status: "sent", chunks: chunks.length, skipped: start, message_ids: messageIds },
    };
  },
};

/** Where this attempt starts: after the parts an earlier attempt of this step recorded as accepted. */
function resumeAt(ctx: ActionContext, total: number): number {
  if (ctx.progress === undefined || ctx.progress === null) return 0;
  const parsed = progressSchema.safeParse(ctx.progress);
  if (!parsed.success) {
    ctx.warn("discord: ignored unreadable progress from the previous attempt; sending every part");
    return 0;
  }
  if (parsed.data.chunks !== total) {
    // The content rendered differently this time, so part boundaries no longer line up: sending
    // everything again may repeat some text, skipping by count could silently lose some.
    ctx.warn(
      `discord: the message now splits into ${total} parts instead of ${parsed.data.chunks}; sending every part again`,
    );
    return 0;
  }
  if (parsed.data.sent > 0) ctx.log.info(`discord: resuming after part ${parsed.data.sent} of ${total}`);
  return Math.min(parsed.data.sent, total);
}

function partError(res: SafeResponse, ctx: ActionContext, index: number, total: number): ActionError {
  const body = parseJsonObject(res);
  const part = total > 1 ? ` on part ${index + 1} of ${total}` : "";
  if (res.status === 429) {
    // Discord sends retry_after in seconds (a float) in the body; Retry-After is the fallback.
    const seconds = typeof body?.retry_after === "number" ? body.retry_after : Number(res.headers["retry-after"]);
    const retryAfterMs = Number.isFinite(seconds) ? clampRetryAfter(seconds * 1000) : undefined;
    return new ActionError(
      `discord: rate limited${part}${retryAfterMs !== undefined ? `; Discord asked to wait ${retryAfterMs / 1000} s` : ""}`,
      { retryable: true, retryAfterMs, output: { status: res.status, body: res.text().slice(0, 2000), sent: index } },
    );
  }
  const detail = typeof body?.message === "string" ? `${body.message}${part}` : `${res.text().trim().slice(0, 300)}${part}`;
  const err = statusError("discord", res, ctx.clock, detail);
  return new ActionError(err.message, {
    retryable: err.retryable,
    retryAfterMs: err.retryAfterMs,
    output: { status: res.status, body: res.text().slice(0, 2000), sent: index },
  });
}

function messageId(res: SafeResponse): string | null {
  const body = parseJsonObject(res);
  return typeof body?.id === "string" ? body.id : null;
}

export default discordAction;
