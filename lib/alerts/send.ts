import { actionRegistry } from "../actions";
import type { App } from "../app";
import { ActionError, errorMessage } from "../core/errors";
import { createRedactor, redactingLogger } from "../secrets/redact";
import { renderConfig } from "../template";
import { messageFields } from "./channel";
import type { AlertMessage } from "./message";
import type { AlertChannel } from "./policy";

type SendApp = Pick<App, "config" | "clock" | "http" | "log" | "secrets">;

/**
 * Sends one alert through its channel's action plug-in, as the executor runs an action: the
 * channel's config rendered (its `{{secrets.X}}` references resolved), the message fields written
 * after rendering (an error message holding `{{` is never taken for a template), the plug-in's
 * schema checked, and its run called with an idempotency key of the alert's id (the http
 * Idempotency-Key, the email Message-ID), so a send cut off by a crash and sent again is one
 * message to a receiver that dedupes. Throws an Error whose message is the provider's answer
 * with every secret the channel used replaced by "[redacted]".
 */
export async function sendThroughChannel(app: SendApp, channel: AlertChannel, msg: AlertMessage, alert: { id: string; appletId: string | null; kind: string }): Promise<void> {
  const redactor = createRedactor();
  const fail = (err: unknown): never => {
    // The provider's answer, with the channel's secrets replaced.
    throw new Error(redactor.redact(errorMessage(err)), { cause: err instanceof ActionError ? undefined : err });
  };
  const plugin = actionRegistry.get(channel.type);
  if (!plugin) throw new Error(`alerts: unknown channel type "${channel.type}"`);
  const lookup = await app.secrets.lookup();
  const rendered = renderConfig(channel.config, { trigger: {}, now: app.clock.now().toISOString(), secrets: (name) => {
    const value = lookup(name);
    if (value) redactor.add([value]);
    return value;
  } });
  redactor.add(rendered.secretsUsed);
  const missing = rendered.warnings.find((w) => /secret/i.test(w));
  const config = { ...rendered.rendered, ...messageFields(channel.type, msg, { alert_id: alert.id, applet_id: alert.appletId, kind: alert.kind }, rendered.rendered) };
  const parsed = plugin.configSchema.safeParse(config);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ");
    return fail(new Error(`the channel's config is invalid once rendered: ${problems}${missing ? ` (${missing})` : ""}`));
  }
  const log = redactingLogger(app.log.child("alerts"), redactor);
  try {
    await plugin.run(parsed.data, {
      http: app.http,
      clock: app.clock,
      log,
      config: app.config,
      run: { runId: alert.id, appletId: alert.appletId ?? "", eventId: alert.id, attempt: 1, actionIndex: 0 },
      idempotencyKey: `alert:${alert.id}`,
      warn: () => undefined,
      progress: undefined,
      saveProgress: async () => undefined,
      secret: (value) => redactor.add([value]),
      redact: (value) => redactor.redact(value),
    });
  } catch (err) {
    fail(err);
  }
}
