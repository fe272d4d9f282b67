import { Hono } from "hono";
import { z } from "zod";
import { checkChannel } from "../../alerts/channel";
import type { AppletAlertChannel } from "../../alerts/policy";
import { UserError } from "../../core/errors";
import type { Problem } from "../../definition";
import { credentialViewOf, type ApiDeps, type ApiEnv } from "../env";
import { alertSettingsView, appletDetail } from "../queries";
import { jsonBody } from "../validate";

const int = (field: string, min: number, max: number) =>
  z.number({ error: `${field} must be a whole number` }).int(`${field} must be a whole number`).min(min, `${field} must be at least ${min}`).max(max, `${field} must be at most ${max}`);

/** Settings' alert section. The channel's config is checked by its plug-in's schema after zod (problems under channel.config.*). */
const settingsBody = z.strictObject({
  channel: z.unknown().optional(),
  window_minutes: int("window_minutes", 1, 1440).default(15),
  trigger_threshold: int("trigger_threshold", 1, 100).default(3),
  auto_pause: z.boolean({ error: "auto_pause must be true or false" }).default(false),
  auto_pause_after: int("auto_pause_after", 1, 1000).default(5),
  /** Alert on a run's first failed attempt (a retry scheduled), not only when the run is dead. */
  alert_on_retry: z.boolean({ error: "alert_on_retry must be true or false" }).default(false),
});

const appletAlertsBody = z.strictObject({
  /** "default" (the Settings channel), "none" (no alerts), or a channel of its own. */
  channel: z.unknown().optional(),
  auto_pause: z.enum(["default", "on", "off"], { error: 'auto_pause must be "default", "on" or "off"' }).default("default"),
});

const refuse = (what: string, problems: Problem[]): never => {
  throw new UserError(`${what}: ${problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`, problems);
};

/** The alert channel and auto-pause, for the install (Settings) and per applet. */
export function alertRoutes({ app }: ApiDeps) {
  return new Hono<ApiEnv>()
    .get("/api/settings/alerts", async (c) => c.json(await alertSettingsView(app, credentialViewOf(c)), 200))
    .put("/api/settings/alerts", jsonBody("alert settings", settingsBody), async (c) => {
      const body = c.req.valid("json");
      let channel = null;
      if (body.channel !== undefined && body.channel !== null) {
        const checked = checkChannel(body.channel, "channel", app.config.allowPrivateUrls);
        if (!checked.ok) return refuse("alert settings", checked.problems);
        channel = checked.channel;
      }
      await app.store.alerts.saveSettings(
        { channel, windowMinutes: body.window_minutes, triggerThreshold: body.trigger_threshold, autoPause: body.auto_pause, autoPauseAfter: body.auto_pause_after, alertOnRetry: body.alert_on_retry },
        app.clock.now().toISOString(),
      );
      return c.json(await alertSettingsView(app, credentialViewOf(c)), 200);
    })
    .post("/api/settings/alerts/test", async (c) => {
      const settings = await app.store.alerts.settings();
      if (!settings.channel) return refuse("test alert", [{ path: "channel", message: "set and save an alert channel first" }]);
      const id = await app.store.alerts.insert({ appletId: null, kind: "test", runId: null, error: null, detail: {} }, app.clock.now().toISOString());
      return c.json({ alert_id: id }, 202);
    })
    .put("/api/applets/:id/alerts", jsonBody("applet alerts", appletAlertsBody), async (c) => {
      const id = c.req.param("id");
      const body = c.req.valid("json");
      let channel: AppletAlertChannel = null;
      if (body.channel === "none") channel = { mode: "none" };
      else if (body.channel !== undefined && body.channel !== "default" && body.channel !== null) {
        const checked = checkChannel(body.channel, "channel", app.config.allowPrivateUrls);
        if (!checked.ok) return refuse("applet alerts", checked.problems);
        channel = checked.channel;
      }
      const autoPause = body.auto_pause === "default" ? null : body.auto_pause === "on";
      if (!(await app.store.alerts.setAppletAlerts(id, channel, autoPause, app.clock.now().toISOString()))) return c.json({ error: "no such applet" }, 404);
      return c.json({ applet: (await appletDetail(app, id, credentialViewOf(c)))! }, 200);
    });
}
