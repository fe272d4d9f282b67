import { z } from "zod";
import { ActionError } from "../core/errors";
import type { SafeResponse } from "../net/types";
import { field } from "../plugin";
import { APPROVE_LABEL, DENY_LABEL, approvalButtonsField, approvalLinks, type ApprovalLinks } from "./approval";
import { chunkMessage } from "./chunk";
import { clampRetryAfter, hasTemplate, isRetryableStatus, isSuccess, parseJsonObject, requireRendered, requiredText, statusError } from "./common";
import type { ActionContext, ActionPlugin } from "./types";

/**
 * Sends a message through a Telegram bot (https://core.telegram.org/bots/api#sendmessage).
 *
 * The bot token is part of the URL path (`/bot<token>/sendMessage`), so a network error or a
 * provider's error would carry it: the action registers the rendered token as a secret of the run
 * before the first request (`ctx.secret`), whether it came from `{{secrets.TELEGRAM_BOT_TOKEN}}`
 * or was pasted as is, and no message of its own ever quotes it.
 *
 * Telegram caps `text` at 4,096 characters, so longer text goes out as several messages, split at
 * line breaks (lib/actions/chunk), one second apart; each accepted part is recorded with
 * `saveProgress`, so a retry resumes after the last part Telegram accepted, as Discord does.
 * A 429 is retried after Telegram's `parameters.retry_after` seconds; 5xx is retried; other 4xx
 * (a chat the bot cannot see, a refused token, bad markup) fail at once with Telegram's reason.
 */

export const TELEGRAM_API = "https://api.telegram.org";
export const TELEGRAM_TEXT_LIMIT = 4096;
/** `123456789:AAE…` as @BotFather hands it out: the bot's id, a colon, and the secret part. */
const BOT_TOKEN = /^\d{3,}:[A-Za-z0-9_-]{20,}$/;
/** A numeric chat id (groups and channels are negative) or a public `@channelusername`. */
const CHAT_ID = /^(-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$/;
const PARSE_MODES = ["MarkdownV2", "HTML", "Markdown"] as const;

const TOKEN_PROBLEM = 'telegram: "bot_token" is not a bot token; it looks like 123456789:AAE… (ask @BotFather for it), and it is best stored as {{secrets.TELEGRAM_BOT_TOKEN}}';

const chatIdProblem = (value: string): string | null =>
  CHAT_ID.test(value.trim()) ? null : `telegram: "chat_id" must be a numeric chat id (such as 123456789 or -1001234567890) or a public @channelusername, got ${JSON.stringify(value.slice(0, 60))}`;

export const telegramConfigSchema = z.strictObject({
  bot_token: field(
    requiredText("telegram", "bot_token").superRefine((v, ctx) => {
      // The value itself is never quoted: it is the bot's password.
      if (!hasTemplate(v) && !BOT_TOKEN.test(v.trim())) ctx.addIssue({ code: "custom", message: TOKEN_PROBLEM });
    }),
    {
      label: "Bot token",
      kind: "secret",
      required: true,
      template: true,
      placeholder: "{{secrets.TELEGRAM_BOT_TOKEN}}",
      help: "From @BotFather (/newbot). Store it as a secret; it is redacted from every error and the run log.",
    },
  ),
  chat_id: field(
    requiredText("telegram", "chat_id").superRefine((v, ctx) => {
      const problem = hasTemplate(v) ? null : chatIdProblem(v);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
    {
      label: "Chat id",
      kind: "text",
      required: true,
      template: true,
      placeholder: "123456789",
      help: "A user's or group's numeric id (groups start with -), or @channelusername. The bot must be in the group or channel, and a user must have sent the bot a message first.",
    },
  ),
  text: field(requiredText("telegram", "text"), {
    label: "Message",
    kind: "textarea",
    required: true,
    template: true,
    help: "Over 4,096 characters it is sent as several messages, split at line breaks, one second apart.",
  }),
  parse_mode: field(z.union([z.literal(""), z.enum(PARSE_MODES, { error: 'telegram: "parse_mode" must be MarkdownV2, HTML or Markdown' })]).optional(), {
    label: "Formatting",
    kind: "select",
    options: [
      { value: "", label: "Plain text" },
      { value: "MarkdownV2", label: "MarkdownV2" },
      { value: "HTML", label: "HTML" },
      { value: "Markdown", label: "Markdown (legacy)" },
    ],
    help: "With formatting, ingredients must be escaped for it (Telegram refuses unbalanced markup), and a long message is split at line breaks, so keep markup within a line.",
  }),
  disable_notification: field(z.boolean().optional(), {
    label: "Send silently",
    kind: "boolean",
    help: "Recipients get the message without a sound.",
  }),
  approval_buttons: approvalButtonsField(),
});

export type TelegramConfig = z.output<typeof telegramConfigSchema>;

/** What `saveProgress` stores: parts accepted so far out of the total. */
const progressSchema = z.object({ sent: z.number().int().min(0), chunks: z.number().int().min(1) });
export type TelegramProgress = z.output<typeof progressSchema>;

export const telegramAction: ActionPlugin<TelegramConfig> = {
  type: "telegram",
  label: "Telegram message",
  description: "Send a message to a Telegram chat, group or channel through your bot; long messages are split into parts.",
  configSchema: telegramConfigSchema,
  exampleConfig: { bot_token: "{{secrets.TELEGRAM_BOT_TOKEN}}", chat_id: "123456789", text: "New order: {{trigger.body.title}}", disable_notification: false },

  dryRunAnswer: () => ({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ ok: true, result: { message_id: 0 } }) }),
  async run(config, ctx) {
    const token = requireRendered("telegram", "bot_token", config.bot_token).trim();
    // Before anything can fail with the URL in its message.
    ctx.secret(token);
    if (!BOT_TOKEN.test(token)) throw new ActionError(TOKEN_PROBLEM.replace("is not", "rendered to something that is not"), { retryable: false });
    const chatId = requireRendered("telegram", "chat_id", config.chat_id).trim();
    const chatProblem = chatIdProblem(chatId);
    if (chatProblem) throw new ActionError(chatProblem, { retryable: false });
    const text = requireRendered("telegram", "text", config.text);

    const url = `${TELEGRAM_API}/bot${token}/sendMessage`;
    const chunks = chunkMessage(text, TELEGRAM_TEXT_LIMIT);
    const start = resumeAt(ctx, chunks.length);
    const messageIds: number[] = [];
    const links = config.approval_buttons ? approvalLinks("telegram", ctx) : null;

    for (let i = start; i < chunks.length; i++) {
      if (i > start) await ctx.clock.sleep(1000);
      const body: Record<string, unknown> = { chat_id: chatId, text: chunks[i] };
      if (config.parse_mode) body.parse_mode = config.parse_mode;
      if (config.disable_notification) body.disable_notification = true;
      // Under the last part, so the buttons come after everything they decide about.
      if (links && i === chunks.length - 1) body.reply_markup = approvalKeyboard(links);
      const res = await ctx.http(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const answer = parseJsonObject(res);
      if (!isSuccess(res.status) || answer?.ok !== true) throw partError(res, answer, ctx, chatId, i, chunks.length);
      const id = (answer.result as { message_id?: unknown } | undefined)?.message_id;
      if (typeof id === "number") messageIds.push(id);
      void ctx.saveProgress({ sent: i + 1, chunks: chunks.length } satisfies TelegramProgress);
    }

    return { output: { status: "sent", chunks: chunks.length, skipped: start, message_ids: messageIds } };
  },
};

/** Where this attempt starts: after the parts an earlier attempt of this step recorded as accepted. */
function resumeAt(ctx: ActionContext, total: number): number {
  if (ctx.progress === undefined || ctx.progress === null) return 0;
  const parsed = progressSchema.safeParse(ctx.progress);
  if (!parsed.success) {
    ctx.warn("telegram: ignored unreadable progress from the previous attempt; sending every part");
    return 0;
  }
  if (parsed.data.chunks !== total) {
    ctx.warn(`telegram: the message now splits into ${total} parts instead of ${parsed.data.chunks}; sending every part again`);
    return 0;
  }
  if (parsed.data.sent > 0) ctx.log.info(`telegram: resuming after part ${parsed.data.sent} of ${total}`);
  return Math.min(parsed.data.sent, total);
}

/** Telegram's own words for the common refusals, said as what to do. */
function explain(status: number, description: string, chatId: string, answer: Record<string, unknown> | null): string {
  const d = description.toLowerCase();
  if (d.includes("chat not found")) {
    return `chat ${chatId} was not found: check the chat id, add the bot to the group or channel, or (for a user) send the bot a message first (Telegram: "${description}")`;
  }
  if (status === 401) return `the bot token was refused; get the current one from @BotFather and update the secret (Telegram: "${description}")`;
  if (d.includes("bot was blocked by the user")) return `the user of chat ${chatId} blocked the bot (Telegram: "${description}")`;
  if (d.includes("button url") || d.includes("button_url") || d.includes("wrong http url")) {
    return `Telegram refused the Approve / Deny button links: it accepts only public http(s) addresses, so PUBLIC_URL must be one (not localhost or a LAN address) (Telegram: "${description}")`;
  }
  if (d.includes("can't parse entities")) return `the message is not valid markup for its parse_mode; escape the ingredients or send it as plain text (Telegram: "${description}")`;
  const migrated = (answer?.parameters as { migrate_to_chat_id?: unknown } | undefined)?.migrate_to_chat_id;
  if (typeof migrated === "number") return `the group became a supergroup; its chat id is now ${migrated} (Telegram: "${description}")`;
  return description;
}

function partError(res: SafeResponse, answer: Record<string, unknown> | null, ctx: ActionContext, chatId: string, index: number, total: number): ActionError {
  const part = total > 1 ? ` on part ${index + 1} of ${total}` : "";
  const output = { status: res.status, body: res.text().slice(0, 2000), sent: index };
  const description = typeof answer?.description === "string" ? answer.description : "";
  if (res.status === 429) {
    // Telegram says how long to wait in parameters.retry_after (seconds); Retry-After is the fallback.
    const seconds = (answer?.parameters as { retry_after?: unknown } | undefined)?.retry_after;
    const fallback = Number(res.headers["retry-after"]);
    const s = typeof seconds === "number" ? seconds : fallback;
    const retryAfterMs = Number.isFinite(s) ? clampRetryAfter(s * 1000) : undefined;
    return new ActionError(`telegram: rate limited${part}${retryAfterMs !== undefined ? `; Telegram asked to wait ${retryAfterMs / 1000} s` : ""}`, { retryable: true, retryAfterMs, output });
  }
  if (isSuccess(res.status)) {
    // A 2xx without `"ok": true` is not Telegram (a proxy, a captive portal): retrying will not change it.
    return new ActionError(`telegram: HTTP ${res.status} without "ok": true${part}: ${res.text().trim().slice(0, 200) || "(empty body)"}`, { retryable: false, output });
  }
  const detail = description ? `${explain(res.status, description, chatId, answer)}${part}` : undefined;
  const err = statusError("telegram", res, ctx.clock, detail);
  return new ActionError(err.message, { retryable: isRetryableStatus(res.status), retryAfterMs: err.retryAfterMs, output });
}

/** URL buttons under the message (https://core.telegram.org/bots/api#inlinekeyboardbutton): they open the approval page, which decides. */
export function approvalKeyboard(links: ApprovalLinks): { inline_keyboard: { text: string; url: string }[][] } {
  return { inline_keyboard: [[{ text: APPROVE_LABEL, url: links.approve_url }, { text: DENY_LABEL, url: links.deny_url }]] };
}

export default telegramAction;
