import { z } from "zod";
import { isSuccess, requireHttpUrl, requireRendered, requiredText, statusError, urlField } from "@/lib/actions/common";
import type { ActionPlugin } from "@/lib/actions/types";
import { field } from "@/lib/plugin";

/**
 * A notifier that is not part of whenthen, written as a new one would be: one file exporting an
 * `ActionPlugin` with `alert` (it can carry failure alerts) and `facts` (what GET /api/meta tells
 * about it). tests/unit/alerts-new-notifier.test.ts adds it to the registry as one more line of
 * the `plugins` list would, and nothing else.
 */
export const pagerConfigSchema = z.strictObject({
  endpoint: field(urlField("pager", "endpoint"), { label: "Pager endpoint", kind: "text", required: true, placeholder: "https://pager.example.com/page" }),
  severity: field(z.enum(["info", "critical"]).default("critical"), {
    label: "Severity",
    kind: "select",
    options: [
      { value: "critical", label: "Critical: wakes someone up" },
      { value: "info", label: "Info" },
    ],
  }),
  summary: field(requiredText("pager", "summary"), { label: "Summary", kind: "textarea", required: true, template: true }),
});
export type PagerConfig = z.output<typeof pagerConfigSchema>;

export const pagerAction: ActionPlugin<PagerConfig, { pager_sender: string }> = {
  type: "pager",
  label: "Page someone",
  description: "Page the person on call through the pager service.",
  configSchema: pagerConfigSchema,
  exampleConfig: { endpoint: "https://pager.example.com/page", severity: "critical", summary: "Order {{trigger.body.id}} failed" },
  urlFields: ["endpoint"],
  alert: {
    label: "Pager (on call)",
    help: "Pages whoever is on call; every alert is critical unless the channel says info.",
    messageFields: ["summary"],
    fill: (msg) => ({ summary: `${msg.title}: ${msg.text}` }),
  },
  // The settings page could say whom a page comes from.
  facts: ({ config }) => ({ pager_sender: config.emailFrom }),
  async run(config, ctx) {
    const endpoint = requireHttpUrl("pager", "endpoint", config.endpoint);
    const summary = requireRendered("pager", "summary", config.summary);
    const res = await ctx.http(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": ctx.idempotencyKey },
      body: JSON.stringify({ severity: config.severity, summary }),
    });
    if (!isSuccess(res.status)) throw statusError("pager", res, ctx.clock);
    return { output: { status: res.status } };
  },
};
