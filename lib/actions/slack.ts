import { z } from "zod";
import { field } from "../plugin";
import { ActionError } from "../core/errors";
import { APPROVE_LABEL, DENY_LABEL, approvalButtonsField, approvalLinks, type ApprovalLinks } from "./approval";
import { chunkMessage } from "./chunk";
import { failureOutput, hasTemplate, requireHttpUrl, requireRendered, requiredText, statusError, urlField } from "./common";
import type { ActionPlugin } from "./types";

/**
 * Posts to a Slack incoming webhook (https://api.slack.com/messaging/webhooks). Slack answers a
 * plain-text `ok` on success and a plain-text error code otherwise (`invalid_payload`,
 * `no_service`, `channel_is_archived`, …), so the body decides, not only the status.
 */

const BLOCKS_ERROR = 'slack: "blocks" must be a JSON array of block objects';

/** Blocks arrive as an array (from an imported definition) or a JSON string (from the form). */
const blocksSchema = z
  .union([z.array(z.unknown()), z.string()])
  .transform((v, ctx): unknown[] | string | undefined => {
    if (Array.isArray(v)) return checkBlocks(v) ? v : fail(JSON.stringify(v));
    const s = v.trim();
    if (s === "") return undefined;
    const parsed = parseBlocks(s);
    if (parsed) return parsed;
    // A template such as `{{vars.blocks | json}}` only becomes JSON once rendered; run() re-checks.
    return hasTemplate(s) ? s : fail(s);

    function fail(shown: string): never {
      ctx.addIssue({ code: "custom", message: `${BLOCKS_ERROR}, got ${shown.length > 60 ? shown.slice(0, 60) + "…" : shown}` });
      return z.NEVER;
    }
  })
  .optional();

const checkBlocks = (v: unknown[]): boolean => v.every((b) => typeof b === "object" && b !== null && !Array.isArray(b));

function parseBlocks(s: string): unknown[] | null {
  try {
    const parsed: unknown = JSON.parse(s);
    return Array.isArray(parsed) && checkBlocks(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

export const slackConfigSchema = z.strictObject({
  webhook_url: field(urlField("slack", "webhook_url"), {
      label: "Webhook URL",
      kind: "secret",
      required: true,
      template: true,
      placeholder: "{{secrets.SLACK_WEBHOOK}}",
      help: "The incoming webhook URL from your Slack app (https://hooks.slack.com/services/…). Store it as a secret.",
    }),
  text: field(requiredText("slack", "text"), {
      label: "Text",
      kind: "textarea",
      required: true,
      template: true,
      help: "The message, in Slack mrkdwn. With blocks, this is the notification fallback text.",
    }),
  blocks: field(blocksSchema, {
      label: "Blocks (JSON)",
      kind: "json",
      template: true,
      help: "Optional Block Kit JSON array, e.g. [{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\",\"text\":\"*Hi*\"}}].",
    }),
  approval_buttons: approvalButtonsField(),
});

export type SlackConfig = z.output<typeof slackConfigSchema>;

export const slackAction: ActionPlugin<SlackConfig> = {
  type: "slack",
  label: "Slack message",
  description: "Post a message to a Slack channel through an incoming webhook.",
  configSchema: slackConfigSchema,
  alert: { label: "Slack", messageFields: ["text", "blocks"], fill: (msg) => ({ text: `*${msg.title}*\n${msg.text}` }) },
  exampleConfig: { webhook_url: "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", text: "New order: {{trigger.body.title}}" },
  typedConfig: ["blocks"],

  dryRunAnswer: () => ({ status: 200, headers: { "content-type": "text/plain" }, body: "ok" }),
  async run(config, ctx) {
    const url = requireHttpUrl("slack", "webhook_url", config.webhook_url);
    const text = requireRendered("slack", "text", config.text);
    let blocks = config.blocks;
    if (typeof blocks === "string") {
      const parsed = parseBlocks(blocks);
      if (!parsed) throw new ActionError(`${BLOCKS_ERROR} after rendering`, { retryable: false });
      blocks = parsed;
    }

    const links = config.approval_buttons ? approvalLinks("slack", ctx) : null;
    if (links) blocks = [...(blocks ?? textBlocks(text)), approvalBlock(links)];

    const res = await ctx.http(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(blocks ? { text, blocks } : { text }),
    });
    const body = res.text().trim();
    if (res.status === 200 && body === "ok") return { output: { status: res.status, response: body } };
    if (res.status >= 200 && res.status < 300) {
      // A 2xx that is not "ok" is not Slack (a proxy, a login page): retrying will not change it.
      throw new ActionError(`slack: the webhook answered HTTP ${res.status} without "ok": ${body.slice(0, 200) || "(empty body)"}`, {
        retryable: false,
        output: failureOutput(res),
      });
    }
    throw statusError("slack", res, ctx.clock);
  },
};

/** A section's text holds at most 3,000 characters (https://docs.slack.dev/reference/block-kit/blocks/section-block). */
const SECTION_TEXT_LIMIT = 3000;

/** With blocks, Slack shows the blocks and keeps `text` for notifications: the text goes in as sections. */
function textBlocks(text: string): unknown[] {
  return chunkMessage(text, SECTION_TEXT_LIMIT).map((part) => ({ type: "section", text: { type: "mrkdwn", text: part } }));
}

/** Link buttons (https://docs.slack.dev/reference/block-kit/block-elements/button-element): they open the approval page, which decides. */
export function approvalBlock(links: ApprovalLinks): Record<string, unknown> {
  return {
    type: "actions",
    block_id: "whenthen_approval",
    elements: [
      { type: "button", action_id: "approve", text: { type: "plain_text", text: APPROVE_LABEL }, style: "primary", url: links.approve_url },
      { type: "button", action_id: "deny", text: { type: "plain_text", text: DENY_LABEL }, style: "danger", url: links.deny_url },
    ],
  };
}

export default slackAction;
