import { z } from "zod";
import { field } from "../plugin";
import { isSuccess, parseJsonObject, requireHttpUrl, requireRendered, requiredText, resolveInt, statusError, templatableInt, urlField } from "./common";
import type { ActionPlugin } from "./types";

/**
 * Sends a push notification through a Gotify server (POST /message with an application token).
 * 401/403 (a wrong or deleted token) and 400 fail at once with Gotify's words; 5xx and a server
 * that cannot be reached are retried. Gotify has no idempotency key: a retry after a lost answer
 * may notify twice.
 */

export const gotifyConfigSchema = z.strictObject({
  server_url: field(urlField("gotify", "server_url"), {
    label: "Gotify server",
    kind: "text",
    required: true,
    placeholder: "https://gotify.example.com",
    help: "One on your own network needs ALLOW_PRIVATE_URLS=true.",
  }),
  app_token: field(requiredText("gotify", "app_token"), {
    label: "Application token",
    kind: "secret",
    required: true,
    template: true,
    placeholder: "{{secrets.GOTIFY_TOKEN}}",
    help: "Gotify → Apps → create an application, copy its token. Store it as a secret.",
  }),
  title: field(z.string().max(250).optional(), { label: "Title", kind: "text", template: true, placeholder: "whenthen" }),
  message: field(requiredText("gotify", "message"), { label: "Message", kind: "textarea", required: true, template: true }),
  priority: field(templatableInt("gotify", "priority", 0, 10), { label: "Priority", kind: "number", placeholder: "5", help: "0–10; the Android app makes a sound from 4 and shows a pop-up from 8." }),
  markdown: field(z.boolean().optional(), { label: "Message is Markdown", kind: "boolean" }),
});
export type GotifyConfig = z.output<typeof gotifyConfigSchema>;

export const gotifyAction: ActionPlugin<GotifyConfig> = {
  type: "gotify",
  label: "Gotify notification",
  description: "Push a notification to your phone or desktop through your own Gotify server.",
  configSchema: gotifyConfigSchema,
  alert: { label: "Gotify", messageFields: ["title", "message"], fill: (msg) => ({ title: msg.title, message: msg.text }) },
  urlFields: ["server_url"],
  typedConfig: ["priority"],
  exampleConfig: { server_url: "https://gotify.example.com", app_token: "{{secrets.GOTIFY_TOKEN}}", title: "New order", message: "{{trigger.body.title}}", priority: 5 },

  async run(config, ctx) {
    const token = requireRendered("gotify", "app_token", config.app_token).trim();
    ctx.secret(token);
    const base = requireHttpUrl("gotify", "server_url", config.server_url).replace(/\/+$/, "");
    const message = requireRendered("gotify", "message", config.message);
    const priority = resolveInt("gotify", "priority", config.priority, 0, 10);
    const body: Record<string, unknown> = { message };
    if (config.title?.trim()) body.title = config.title;
    if (priority !== undefined) body.priority = priority;
    if (config.markdown) body.extras = { "client::display": { contentType: "text/markdown" } };
    const res = await ctx.http(`${base}/message`, { method: "POST", headers: { "x-gotify-key": token, "content-type": "application/json" }, body: JSON.stringify(body) });
    const answer = parseJsonObject(res);
    if (!isSuccess(res.status)) {
      const said = typeof answer?.errorDescription === "string" ? answer.errorDescription : undefined;
      const detail = res.status === 401 || res.status === 403 ? `Gotify refused the application token${said ? ` ("${said}")` : ""}; copy it again from Gotify → Apps` : said;
      throw statusError("gotify", res, ctx.clock, detail);
    }
    return { output: { status: res.status, id: typeof answer?.id === "number" ? answer.id : null } };
  },
};

export default gotifyAction;
