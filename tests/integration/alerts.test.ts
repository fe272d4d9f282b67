import { processMetrics } from "@/lib/metrics";
import { http, HttpResponse } from "msw";
import { afterEach, describe, expect, test } from "vitest";
import { dispatchAlerts, SEND_LOCK_MS } from "@/lib/alerts/dispatch";
import { createApi } from "@/lib/api";
import { runSchedulerTick } from "@/lib/tick/tick";
import { alertSettingsView, appletList } from "@/lib/api/queries";
import { createTestApp, webhookToHttp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { SLACK_WEBHOOK, sent, sentTo, server, useHttpMocks } from "../helpers/http";
import { testIdentity } from "../helpers/auth";
import { startWorker } from "../helpers/worker";

useHttpMocks();

const WINDOW_MS = 15 * 60_000;
const slackChannel = { type: "slack" as const, config: { webhook_url: "{{secrets.SLACK_WEBHOOK}}" } };

forEachEngine((engine) => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(settings: { autoPause?: boolean; autoPauseAfter?: number } = {}) {
    const app = createTestApp({ engine, env: { PUBLIC_URL: "https://wt.example.com" } });
    cleanups.push(() => app.cleanup());
    await app.secrets.set("SLACK_WEBHOOK", SLACK_WEBHOOK);
    await app.store.alerts.saveSettings(
      { channel: slackChannel, windowMinutes: 15, triggerThreshold: 3, autoPause: settings.autoPause ?? false, autoPauseAfter: settings.autoPauseAfter ?? 5 },
      app.clock.now().toISOString(),
    );
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    return { app, worker };
  }

  /** One run of the applet, executed to its end (max_attempts 1: a 500 makes it dead at once). */
  async function runOnce(app: TestApp, worker: ReturnType<typeof startWorker>, appletId: string): Promise<string> {
    const { runId } = await app.applets.test(appletId, { body: {} });
    await worker.drain();
    return runId;
  }
  const dispatch = (app: TestApp) => dispatchAlerts(app, { holder: "test" });
  const slackTexts = () => sentTo("slack").map((r) => String((JSON.parse(r.body) as { text: string }).text));

  describe("failure alerts", () => {
    test("a run going dead sends exactly one alert with the run link", async () => {
      const { app, worker } = await setup();
      const applet = await app.applets.create({ name: "Orders to CRM", definition: webhookToHttp("https://status.test/status/500", { retry: { max_attempts: 1 } }) });
      const runId = await runOnce(app, worker, applet.id);
      expect((await app.store.runs.get(runId))!.status).toBe("dead");
      sent.length = 0;
      const alertsSent = () => processMetrics().alertSends.get().then((m) => m.values.filter((v) => v.labels.outcome === "sent").reduce((n, v) => n + v.value, 0));
      const sentBefore = await alertsSent();
      await dispatch(app);
      await dispatch(app);
      app.clock.advance(WINDOW_MS + 1);
      await dispatch(app);
      expect(sentTo("slack")).toHaveLength(1);
      // GET /metrics counts it (whenthen_alert_sends_total{outcome="sent"}).
      expect((await alertsSent()) - sentBefore).toBe(1);
      const [text] = slackTexts();
      expect(text).toContain('"Orders to CRM"');
      expect(text).toContain("went dead");
      expect(text).toContain("answered 500");
      expect(text).toContain(`https://wt.example.com/runs/${runId}`);
      const view = await alertSettingsView(app);
      expect(view.recent.map((a) => [a.kind, a.status])).toEqual([["failure", "sent"]]);
    });

    test("50 failures in 15 minutes send one alert, then one digest counting the rest", async () => {
      const { app, worker } = await setup();
      const applet = await app.applets.create({ name: "Flaky", definition: webhookToHttp("https://status.test/status/400") });
      sent.length = 0;
      const runIds: string[] = [];
      for (let i = 0; i < 50; i++) {
        runIds.push(await runOnce(app, worker, applet.id));
        await dispatch(app);
        app.clock.advance(15_000); // 50 × 15 s = 12.5 min: all inside one window
      }
      const failuresSent = () => slackTexts().length;
      expect(failuresSent()).toBe(1);
      expect(slackTexts()[0]).toContain(`/runs/${runIds[0]}`);
      // The window of the first alert ends: one digest for the other 49.
      app.clock.advance(WINDOW_MS);
      await dispatch(app);
      await dispatch(app);
      expect(failuresSent()).toBe(2);
      const digest = slackTexts()[1]!;
      expect(digest).toContain("and 48 more failed runs");
      expect(digest).toContain(`/runs/${runIds[49]}`);
      expect(digest).toContain("failed 49 times");
    });

    test("recovery sends one notice when the applet next succeeds", async () => {
      const { app, worker } = await setup();
      const applet = await app.applets.create({ name: "Feed", definition: webhookToHttp("https://status.test/status/400") });
      await runOnce(app, worker, applet.id);
      await dispatch(app);
      app.clock.advance(1_000);
      await app.applets.update(applet.id, { definition: webhookToHttp("https://status.test/status/200") });
      app.clock.advance(WINDOW_MS + 1);
      sent.length = 0;
      const ok = await runOnce(app, worker, applet.id);
      expect((await app.store.runs.get(ok))!.error).toBeNull();
      expect((await app.store.runs.get(ok))!.status).toBe("succeeded");
      await runOnce(app, worker, applet.id);
      await dispatch(app);
      app.clock.advance(WINDOW_MS + 1);
      await dispatch(app);
      expect(slackTexts()).toHaveLength(1);
      expect(slackTexts()[0]).toContain('"Feed" recovered');
    });

    test("auto-pause disables the applet after N failed runs, the list shows why, an alert says so, enabling clears it", async () => {
      const { app, worker } = await setup({ autoPause: true, autoPauseAfter: 3 });
      const applet = await app.applets.create({ name: "Sheets sync", definition: webhookToHttp("https://status.test/status/400") });
      for (let i = 0; i < 2; i++) await runOnce(app, worker, applet.id);
      expect((await app.store.applets.get(applet.id))!.enabled).toBe(true);
      await runOnce(app, worker, applet.id);
      const paused = (await app.store.applets.get(applet.id))!;
      expect(paused.enabled).toBe(false);
      expect(paused.pausedReason).toBe("Paused after 3 failed runs in a row");
      expect(paused.pausedAt).toBe(app.clock.now().toISOString());
      // Disabled since then: enabling a schedule says which of its times passed meanwhile.
      expect(paused.disabledAt).toBe(app.clock.now().toISOString());
      const listed = (await appletList(app)).find((a) => a.id === applet.id)!;
      expect(listed).toMatchObject({ enabled: false, paused_reason: "Paused after 3 failed runs in a row", paused_at: paused.pausedAt });
      sent.length = 0;
      await dispatch(app);
      expect(slackTexts()).toHaveLength(1);
      expect(slackTexts()[0]).toContain("was paused after 3 failed runs");
      // Per applet, auto-pause off wins over the global default.
      await app.applets.setEnabled(applet.id, true);
      const enabled = (await app.store.applets.get(applet.id))!;
      expect([enabled.enabled, enabled.pausedReason, enabled.pausedAt, enabled.disabledAt, enabled.failureStreak]).toEqual([true, null, null, null, 0]);
      await app.store.alerts.setAppletAlerts(applet.id, null, false, app.clock.now().toISOString());
      for (let i = 0; i < 4; i++) await runOnce(app, worker, applet.id);
      expect((await app.store.applets.get(applet.id))!.enabled).toBe(true);
    });

    test("a send cut off mid-way (its worker died) is sent again after its lock, once, with the same idempotency key", async () => {
      const app = createTestApp({ engine, env: { PUBLIC_URL: "https://wt.example.com" } });
      cleanups.push(() => app.cleanup());
      await app.store.alerts.saveSettings(
        { channel: { type: "http", config: { url: "https://status.test/status/200" } }, windowMinutes: 15, triggerThreshold: 3, autoPause: false, autoPauseAfter: 5 },
        app.clock.now().toISOString(),
      );
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      const applet = await app.applets.create({ name: "Cut off", definition: webhookToHttp("https://status.test/status/400") });
      await runOnce(app, worker, applet.id);
      // The first dispatcher committed the send and died before the provider answered.
      const [pending] = await app.store.alerts.pending(10);
      const now = app.clock.now();
      expect(await app.store.alerts.beginSend(pending!.id, [], JSON.stringify({ title: "t", text: "cut off", link: "l" }), "http", now.toISOString(), new Date(now.getTime() + SEND_LOCK_MS).toISOString())).toBe(true);
      sent.length = 0;
      await dispatch(app);
      expect(sentTo("status")).toHaveLength(0);
      app.clock.advance(SEND_LOCK_MS + 1);
      await dispatch(app);
      await dispatch(app);
      expect(sentTo("status")).toHaveLength(1);
      expect(sentTo("status")[0]!.headers["idempotency-key"]).toBe(`alert:${pending!.id}`);
      expect((await app.store.alerts.recent(10)).map((a) => [a.id, a.status])).toEqual([[pending!.id, "sent"]]);
    });

    test("an RSS trigger failing 3 checks in a row sends one alert (not one per check), and a good check one recovery notice", async () => {
      const { app } = await setup();
      let status = 500;
      server.use(http.get("https://feeds.example/broken.xml", () => new HttpResponse(status === 200 ? "<rss><channel></channel></rss>" : "upstream down", { status, headers: { "content-type": "application/rss+xml" } })));
      const applet = await app.applets.create({
        name: "Blog feed",
        definition: { version: 1, trigger: { type: "rss", config: { url: "https://feeds.example/broken.xml", interval_min: 15 } }, actions: [{ type: "http", config: { url: "https://status.test/status/200" } }] },
      });
      sent.length = 0;
      const tick = async () => {
        app.clock.set((await app.store.triggerState.get(applet.id))!.nextRunAt!);
        await runSchedulerTick(app, app.clock.now(), { holder: "test" });
        await dispatch(app);
      };
      for (let i = 0; i < 2; i++) await tick();
      expect(slackTexts()).toHaveLength(0);
      for (let i = 0; i < 3; i++) await tick(); // the third fails: one alert; the 4th and 5th add none
      expect(slackTexts()).toHaveLength(1);
      expect(slackTexts()[0]).toContain('The trigger of "Blog feed" failed 3 checks in a row');
      expect(slackTexts()[0]).toContain("answered HTTP 500");
      expect(slackTexts()[0]).toContain(`https://wt.example.com/applets/${applet.id}`);
      status = 200;
      await tick();
      await tick();
      expect(slackTexts()).toHaveLength(2);
      expect(slackTexts()[1]).toContain('The trigger of "Blog feed" works again');
    });

    test("an applet set to no alerts sends none; its own channel overrides Settings'", async () => {
      const { app, worker } = await setup();
      const quiet = await app.applets.create({ name: "Quiet", definition: webhookToHttp("https://status.test/status/400") });
      await app.store.alerts.setAppletAlerts(quiet.id, { mode: "none" }, null, app.clock.now().toISOString());
      const own = await app.applets.create({ name: "Own", definition: webhookToHttp("https://status.test/status/400") });
      await app.store.alerts.setAppletAlerts(own.id, { type: "push", config: { provider: "ntfy", topic: "wt-alerts-own" } }, null, app.clock.now().toISOString());
      sent.length = 0;
      await runOnce(app, worker, quiet.id);
      await runOnce(app, worker, own.id);
      await dispatch(app);
      expect(sentTo("slack")).toHaveLength(0);
      expect(sentTo("ntfy")).toHaveLength(1);
      expect(sentTo("ntfy")[0]!.body).toContain('\\"Own\\"');
    });
  });

  describe("retrying runs", () => {
    /** A run whose first attempt gets a 500 (max_attempts 3): after the drain it waits for attempt 2. */
    async function failFirstAttempt(alertOnRetry: boolean | undefined) {
      const { app, worker } = await setup();
      const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
      const req = (path: string, init: RequestInit = {}) =>
        api.handle(new Request(`https://wt.example.com${path}`, { ...init, headers: { "content-type": "application/json", origin: "https://wt.example.com" } }));
      if (alertOnRetry !== undefined) {
        const put = await req("/api/settings/alerts", { method: "PUT", body: JSON.stringify({ channel: slackChannel, alert_on_retry: alertOnRetry }) });
        expect(put.status).toBe(200);
        expect(((await put.json()) as { alert_on_retry: boolean }).alert_on_retry).toBe(alertOnRetry);
      }
      const applet = await app.applets.create({ name: "Orders to CRM", definition: webhookToHttp("https://status.test/status/500", { retry: { max_attempts: 3 } }) });
      sent.length = 0;
      const runId = await runOnce(app, worker, applet.id);
      return { app, req, applet, runId };
    }

    test("a run waiting for its next attempt is retrying in the API (the run, the runs list and its filter) and its applet needs attention", async () => {
      const { app, req, applet, runId } = await failFirstAttempt(undefined);
      expect(await app.store.runs.get(runId)).toMatchObject({ status: "queued", attempt: 2 });
      const one = (await (await req(`/api/runs/${runId}`)).json()) as { run: { status: string; attempt: number; max_attempts: number; next_attempt_at: string | null } };
      expect(one.run).toMatchObject({ status: "retrying", attempt: 2, max_attempts: 3 });
      expect(one.run.next_attempt_at).not.toBeNull();
      const listed = (await (await req("/api/runs?status=retrying")).json()) as { runs: { id: string; status: string }[] };
      expect(listed.runs.map((r) => [r.id, r.status])).toEqual([[runId, "retrying"]]);
      expect(((await (await req("/api/runs?status=queued")).json()) as { runs: unknown[] }).runs).toEqual([]);
      const [row] = await appletList(app);
      expect(row).toMatchObject({ id: applet.id, last_run_status: "retrying" });
      const { needsAttention } = await import("@/lib/ui/applet-list");
      expect(needsAttention({ ...row!, name: row!.name, triggerType: row!.trigger_type, createdAt: row!.created_at, lastStatus: row!.last_run_status, lastAt: row!.last_run_at, triggerError: null })).toBe(true);
    });

    test("alert on the first failed attempt: chosen, the failed first attempt sends an alert saying when it retries, in the applet's zone", async () => {
      const { app } = await failFirstAttempt(true);
      await dispatch(app);
      expect(sentTo("slack")).toHaveLength(1);
      const [text] = slackTexts();
      expect(text).toMatch(/A run of "Orders to CRM" failed attempt 1 of 3 and will retry at \d\d:\d\d UTC: .*answered 500/);
    });

    test("alert on the first failed attempt: not chosen, the failed first attempt sends nothing (the run is not dead yet)", async () => {
      const { app } = await failFirstAttempt(false);
      await dispatch(app);
      app.clock.advance(WINDOW_MS + 1);
      await dispatch(app);
      expect(sentTo("slack")).toHaveLength(0);
    });
  });

  describe("bad input", () => {
    test("an alert channel whose config is invalid is refused on save with the field named, and nothing is saved", async () => {
      const { app } = await setup();
      const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
      const put = (body: unknown) =>
        api.handle(new Request("https://wt.example.com/api/settings/alerts", { method: "PUT", headers: { "content-type": "application/json", origin: "https://wt.example.com" }, body: JSON.stringify(body) }));
      const bad = await put({ channel: { type: "push", config: { provider: "ntfy", topic: "no spaces allowed" } } });
      expect(bad.status).toBe(400);
      const body = (await bad.json()) as { error: string; problems: { path: string; message: string }[] };
      expect(body.problems.map((p) => p.path)).toEqual(["channel.config.topic"]);
      const unknownType = await put({ channel: { type: "telegram", config: {} } });
      expect(((await unknownType.json()) as { problems: { path: string }[] }).problems.map((p) => p.path)).toEqual(["channel.type"]);
      const badUrl = await put({ channel: { type: "slack", config: { webhook_url: "ftp://hooks.example.com/x" } } });
      expect(((await badUrl.json()) as { problems: { path: string }[] }).problems[0]!.path).toBe("channel.config.webhook_url");
      expect((await app.store.alerts.settings()).channel).toEqual(slackChannel);
      const good = await put({ channel: { type: "email", config: { to: "ops@example.com" } }, window_minutes: 30 });
      expect(good.status).toBe(200);
      expect(await app.store.alerts.settings()).toMatchObject({ channel: { type: "email", config: { to: "ops@example.com" } }, windowMinutes: 30 });
    });

    test("a channel that fails at send time shows in Settings with the provider's answer, secrets redacted, and raises no alert of its own", async () => {
      const { app, worker } = await setup();
      server.use(
        http.post("https://hooks.slack.com/services/:team/:bot/:secret", ({ request }) =>
          new HttpResponse(`invalid_token for ${new URL(request.url).pathname}`, { status: 403, headers: { "content-type": "text/plain" } }),
        ),
      );
      const applet = await app.applets.create({ name: "Broken channel", definition: webhookToHttp("https://status.test/status/400") });
      await runOnce(app, worker, applet.id);
      await dispatch(app);
      app.clock.advance(WINDOW_MS + 1);
      await dispatch(app);
      const view = await alertSettingsView(app);
      expect(view.recent).toHaveLength(1);
      const [failed] = view.recent;
      expect(failed!.status).toBe("failed");
      expect(failed!.provider_answer).toContain("403");
      expect(failed!.provider_answer).toContain("invalid_token");
      expect(failed!.provider_answer).toContain("[redacted]");
      expect(failed!.provider_answer).not.toContain("XXXXXXXX");
    });
  });
});
