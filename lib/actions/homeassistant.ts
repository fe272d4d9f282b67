import { z } from "zod";
import { ActionError } from "../core/errors";
import { field } from "../plugin";
import { hasTemplate, isSuccess, parseJsonObject, requireHttpUrl, requireRendered, requiredText, statusError, urlField } from "./common";
import type { ActionPlugin } from "./types";

/**
 * Calls a Home Assistant service over its REST API (POST /api/services/<domain>/<service>) with a
 * long-lived access token (Profile → Security in Home Assistant): turn on a light, send a
 * notification through `notify.mobile_app_…`, run a script. The service data is a JSON object
 * whose values may use ingredients.
 *
 * 401 (a revoked token) and 400 (an unknown service, data the service refuses) fail at once with
 * Home Assistant's words; 5xx and a Home Assistant that cannot be reached are retried. A service
 * call is not idempotent in general (a toggle), so a retry after a lost answer may call it twice.
 */

const SERVICE = /^[a-z0-9_]+\.[a-z0-9_]+$/;

export const homeAssistantConfigSchema = z.strictObject({
  base_url: field(urlField("homeassistant", "base_url"), {
    label: "Home Assistant URL",
    kind: "text",
    required: true,
    placeholder: "https://home.example.com",
    help: "The address you open Home Assistant at. One on your own network (http://homeassistant.local:8123) needs ALLOW_PRIVATE_URLS=true.",
  }),
  token: field(requiredText("homeassistant", "token"), {
    label: "Long-lived access token",
    kind: "secret",
    required: true,
    template: true,
    placeholder: "{{secrets.HOME_ASSISTANT_TOKEN}}",
    help: "Home Assistant → your profile → Security → Long-lived access tokens. Store it as a secret.",
  }),
  service: field(
    requiredText("homeassistant", "service").superRefine((v, ctx) => {
      if (!hasTemplate(v) && !SERVICE.test(v.trim())) ctx.addIssue({ code: "custom", message: `homeassistant: "service" must be domain.service, such as light.turn_on or notify.mobile_app_pixel, got ${JSON.stringify(v.slice(0, 60))}` });
    }),
    { label: "Service", kind: "text", required: true, template: true, placeholder: "light.turn_on", help: "domain.service, as in Developer tools → Actions." },
  ),
  data: field(z.union([z.record(z.string(), z.unknown()), z.string()], { error: 'homeassistant: "data" must be a JSON object' }).optional(), {
    label: "Service data",
    kind: "json",
    template: true,
    placeholder: '{"entity_id": "light.porch", "brightness_pct": 80}',
    help: "A JSON object; values may use ingredients ({{trigger.payload.temperature}}).",
  }),
});
export type HomeAssistantConfig = z.output<typeof homeAssistantConfigSchema>;

export const homeAssistantAction: ActionPlugin<HomeAssistantConfig> = {
  type: "homeassistant",
  label: "Home Assistant service",
  description: "Call a Home Assistant service (light.turn_on, notify.mobile_app_…, script.…) with a long-lived access token.",
  configSchema: homeAssistantConfigSchema,
  // A notify service (notify.mobile_app_…) takes the alert as its data.
  alert: { label: "Home Assistant (a notify service)", messageFields: ["data"], fill: (msg) => ({ data: { title: msg.title, message: msg.text } }) },
  urlFields: ["base_url"],
  typedConfig: ["data"],
  exampleConfig: { base_url: "https://home.example.com", token: "{{secrets.HOME_ASSISTANT_TOKEN}}", service: "notify.mobile_app_pixel", data: { title: "Order", message: "New order: {{trigger.body.title}}" } },

  async run(config, ctx) {
    const token = requireRendered("homeassistant", "token", config.token).trim();
    ctx.secret(token);
    const base = requireHttpUrl("homeassistant", "base_url", config.base_url).replace(/\/+$/, "");
    const service = requireRendered("homeassistant", "service", config.service).trim();
    if (!SERVICE.test(service)) throw new ActionError(`homeassistant: "service" rendered to ${JSON.stringify(service.slice(0, 60))}, not domain.service`, { retryable: false });
    let data: unknown = config.data ?? {};
    if (typeof data === "string") {
      try {
        data = JSON.parse(data);
      } catch {
        throw new ActionError('homeassistant: "data" is not JSON once rendered', { retryable: false });
      }
    }
    if (!data || typeof data !== "object" || Array.isArray(data)) throw new ActionError('homeassistant: "data" must be a JSON object', { retryable: false });
    const [domain, name] = service.split(".") as [string, string];
    const res = await ctx.http(`${base}/api/services/${domain}/${name}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(data),
    });
    if (!isSuccess(res.status)) {
      const answer = parseJsonObject(res);
      const said = typeof answer?.message === "string" ? answer.message : res.text().trim().slice(0, 300);
      const detail =
        res.status === 401
          ? `Home Assistant refused the token; create a new long-lived access token and update the secret${said ? ` (Home Assistant: "${said}")` : ""}`
          : res.status === 400 || res.status === 404
            ? `Home Assistant refused the call to ${service}${said ? `: "${said}"` : ""} (check the service name in Developer tools → Actions, and its data)`
            : said;
      throw statusError("homeassistant", res, ctx.clock, detail);
    }
    let changed: unknown = null;
    try {
      changed = JSON.parse(res.text());
    } catch {
      // An empty or non-JSON answer to a successful call is fine.
    }
    return { output: { status: res.status, service, changed_states: Array.isArray(changed) ? changed.length : null } };
  },
};

export default homeAssistantAction;
