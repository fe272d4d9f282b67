import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { http, passthrough } from "msw";
import { afterEach, beforeEach, expect, test } from "vitest";
import { checkQuiet, quietApplets } from "@/lib/fires/check";
import { deliver } from "@/lib/mail/receiver";
import { createSandbox } from "@/lib/sandbox";
import { runRetention } from "@/lib/tick/retention";
import { runSchedulerTick } from "@/lib/tick/tick";
import { collectHealthFigures, renderMetrics } from "@/lib/metrics/collect";
import { alertsOf, createTestApp, eventsOf, runsOf, webhookToHttp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { serveIngress } from "../helpers/ingress";
import { server as mocks, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/** The fire ledger (every fire considered, with its outcome and reason) and expected activity (quiet alerts), with an injected clock. */

useHttpMocks();
// The test's own ingress on 127.0.0.1 is reached for real; the actions' hosts stay mocked.
beforeEach(() => mocks.use(http.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough())));

const HOUR = 3_600_000;
const SINK = "https://status.test/status/200";

forEachEngine((engine) => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function setup(start = "2026-03-07T12:00:00.000Z"): TestApp {
    const app = createTestApp({ engine, start });
    cleanups.push(() => app.cleanup());
    return app;
  }

  const serve = (app: TestApp) => serveIngress(app, cleanups);

  const ledgerOf = async (app: TestApp, appletId: string, outcome?: Parameters<TestApp["store"]["fires"]["list"]>[1]["outcome"]) =>
    (await app.store.fires.list(appletId, { outcome, limit: 100 })).entries;

  test("a schedule whose worker was down across three slots shows three ledger rows with their reasons, one of them the catch-up fire", async () => {
    const app = setup();
    const applet = await app.applets.create({
      name: "hourly",
      definition: { version: 1, trigger: { type: "schedule", config: { cron: "0 * * * *", timezone: "UTC" } }, actions: [{ type: "http", config: { url: SINK, method: "POST" } }] },
    });
    // Down from 12:00 to 15:20: the 13:00, 14:00 and 15:00 slots passed with no worker.
    app.clock.set("2026-03-07T15:20:00.000Z");
    await runSchedulerTick(app, app.clock.now(), { holder: "w" });
    const rows = await ledgerOf(app, applet.id);
    expect(rows.map((r) => [r.at, r.outcome])).toEqual([
      ["2026-03-07T15:00:00.000Z", "missed"],
      ["2026-03-07T14:00:00.000Z", "missed"],
      ["2026-03-07T13:00:00.000Z", "late"],
    ]);
    const [, missed, late] = rows;
    expect(missed!.detail).toMatch(/worker was not running.*fire once.*fired only the first missed time \(2026-03-07T13:00:00.000Z\)/);
    expect(late!.detail).toBe("fired 2 h 20 min late: the worker was not running at this time");
    // The catch-up fire is a run, and the one run of the tick (its own row is replaced by the late one).
    const runs = await runsOf(app.store, applet.id);
    expect(runs.map((r) => r.id)).toEqual([late!.runId]);
    expect(late!.runStatus).toBe("queued");
    // The filter by outcome.
    expect((await ledgerOf(app, applet.id, "missed")).length).toBe(2);
    expect((await ledgerOf(app, applet.id, "fired")).length).toBe(0);
    // The next slot on time is an ordinary fire: the run's own row.
    app.clock.set("2026-03-07T16:00:05.000Z");
    await runSchedulerTick(app, app.clock.now(), { holder: "w" });
    const fired = await ledgerOf(app, applet.id, "fired");
    expect(fired.length).toBe(1);
    expect(fired[0]!.id).toBe(`run:${fired[0]!.runId}`);
  });

  test("a schedule disabled for an hour: enabling it writes one ledger row for the times that passed meanwhile (disabled, not missed), fires none of them, and waits for its next time; paused says its reason", async () => {
    const app = setup("2026-03-07T10:00:00.000Z");
    const applet = await app.applets.create({
      name: "every five",
      definition: { version: 1, trigger: { type: "schedule", config: { cron: "*/5 * * * *", timezone: "UTC", catch_up: "all" } }, actions: [{ type: "http", config: { url: SINK, method: "POST" } }] },
    });
    app.clock.set("2026-03-07T10:05:00.000Z");
    await runSchedulerTick(app, app.clock.now(), { holder: "w" });
    app.clock.set("2026-03-07T10:07:00.000Z");
    await app.applets.setEnabled(applet.id, false);
    // Ticks while it is disabled fire nothing and record nothing.
    app.clock.set("2026-03-07T10:30:00.000Z");
    await runSchedulerTick(app, app.clock.now(), { holder: "w" });
    app.clock.set("2026-03-07T11:02:00.000Z");
    await app.applets.setEnabled(applet.id, true);
    const stored = (await ledgerOf(app, applet.id)).filter((r) => r.outcome !== "fired");
    expect(stored.map((r) => [r.at, r.outcome, r.count, r.runId])).toEqual([["2026-03-07T10:10:00.000Z", "disabled", 11, null]]);
    expect(stored[0]!.detail).toBe(
      "11 times from 2026-03-07T10:10:00.000Z to 2026-03-07T11:00:00.000Z passed while the applet was disabled; enabled at 2026-03-07T11:02:00.000Z, it fires none of them and waits for its next time",
    );
    // No catch-up burst (even with catch_up "all"): the next tick fires nothing, the next time fires once, on time.
    app.clock.set("2026-03-07T11:02:30.000Z");
    expect((await runSchedulerTick(app, app.clock.now(), { holder: "w" })).events).toBe(0);
    app.clock.set("2026-03-07T11:05:01.000Z");
    expect((await runSchedulerTick(app, app.clock.now(), { holder: "w" })).events).toBe(1);
    expect((await ledgerOf(app, applet.id)).filter((r) => r.outcome === "missed" || r.outcome === "late" || r.outcome === "dropped_catchup")).toEqual([]);

    // Paused (auto-pause keeps next_run_at): the same, with its reason; a save that enables it counts too.
    app.clock.set("2026-03-07T12:00:00.000Z");
    // No store method pauses an applet but a finish after its failures: the row auto-pause leaves, written directly.
    await app.sql.run("UPDATE applets SET enabled = 0, paused_reason = ?, paused_at = ?, disabled_at = ? WHERE id = ?", "Paused after 5 failed runs in a row", app.clock.now().toISOString(), app.clock.now().toISOString(), applet.id);
    app.clock.set("2026-03-07T12:12:00.000Z");
    await app.applets.update(applet.id, { enabled: true });
    const paused = await ledgerOf(app, applet.id, "paused");
    expect(paused.map((r) => [r.at, r.count, r.detail])).toEqual([
      ["2026-03-07T12:05:00.000Z", 2, "2 times from 2026-03-07T12:05:00.000Z to 2026-03-07T12:10:00.000Z passed while the applet was paused (Paused after 5 failed runs in a row); enabled at 2026-03-07T12:12:00.000Z, it fires none of them and waits for its next time"],
    ]);
    app.clock.set("2026-03-07T12:12:30.000Z");
    expect((await runSchedulerTick(app, app.clock.now(), { holder: "w" })).events).toBe(0);
  });

  test("a minutely schedule disabled for a month is one ledger row, its count bounded", async () => {
    const app = setup("2026-03-01T00:00:00.000Z");
    const applet = await app.applets.create({ name: "minutely", enabled: false, definition: { version: 1, trigger: { type: "schedule", config: { cron: "* * * * *", timezone: "UTC" } }, actions: [{ type: "http", config: { url: SINK, method: "POST" } }] } });
    await app.applets.setEnabled(applet.id, true);
    await app.applets.setEnabled(applet.id, false);
    app.clock.set("2026-03-31T00:00:00.000Z");
    await app.applets.setEnabled(applet.id, true);
    const rows = await ledgerOf(app, applet.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ outcome: "disabled", at: "2026-03-01T00:01:00.000Z", count: 1_000 });
    expect(rows[0]!.detail).toMatch(/^more than 1,000 times from 2026-03-01T00:01:00.000Z to 2026-03-31T00:00:00.000Z passed while the applet was disabled/);
  });

  test("catch-up 'all' and 'skip': slots past the window or the limit are dropped, a skip policy's are missed, each with its reason", async () => {
    const app = setup();
    const make = (name: string, extra: Record<string, unknown>) =>
      app.applets.create({ name, definition: { version: 1, trigger: { type: "schedule", config: { cron: "0 * * * *", timezone: "UTC", ...extra } }, actions: [{ type: "http", config: { url: SINK, method: "POST" } }] } });
    const limited = await make("limited", { catch_up: "all", catch_up_limit: 2, catch_up_window_hours: 3 });
    const skipping = await make("skipping", { catch_up: "skip" });
    app.clock.set("2026-03-07T18:20:00.000Z"); // 13:00 … 18:00 missed
    await runSchedulerTick(app, app.clock.now(), { holder: "w" });
    const l = await ledgerOf(app, limited.id);
    const count = (rows: typeof l, outcome: string) => rows.filter((r) => r.outcome === outcome).length;
    // Window 3 h: 16:00, 17:00, 18:00 are in it; the limit fires two of them (16:00, 17:00).
    expect(count(l, "late")).toBe(2);
    expect(l.filter((r) => r.outcome === "dropped_catchup").map((r) => [r.at.slice(11, 16), r.detail.replace(/^.*, and /, "")])).toEqual([
      ["18:00", "the catch-up limit (2 missed fires) was reached"],
      ["15:00", "it is older than the catch-up window (3 h)"],
      ["14:00", "it is older than the catch-up window (3 h)"],
      ["13:00", "it is older than the catch-up window (3 h)"],
    ]);
    const s = await ledgerOf(app, skipping.id);
    expect(s.map((r) => r.outcome)).toEqual(Array(6).fill("missed"));
    expect(s[0]!.detail).toMatch(/skip what was missed/);
  });

  test("a schedule's overlap skip and a filter's skip appear in the ledger as the runs they are, with their reasons", async () => {
    const app = setup();
    const applet = await app.applets.create({
      name: "overlapping",
      definition: { version: 1, trigger: { type: "schedule", config: { cron: "*/5 * * * *", timezone: "UTC", overlap: "skip" } }, actions: [{ type: "http", config: { url: SINK, method: "POST" } }] },
    });
    app.clock.set("2026-03-07T12:05:00.000Z");
    await runSchedulerTick(app, app.clock.now(), { holder: "w" });
    app.clock.set("2026-03-07T12:10:00.000Z"); // the 12:05 run still waits
    await runSchedulerTick(app, app.clock.now(), { holder: "w" });
    const skipped = await ledgerOf(app, applet.id, "skipped_overlap");
    expect(skipped.map((r) => r.detail)).toEqual(["skipped: overlap (the previous run was still waiting)"]);

    const { base } = await serve(app);
    const filtered = await app.applets.create({ name: "filtered", definition: { ...webhookToHttp(SINK), filter: { code: "if (trigger.body.title === 'draft') skip('a draft')" } } });
    await fetch(`${base}/api/hooks/${filtered.id}/${filtered.webhookToken}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "draft" }) });
    const sandbox = createSandbox({ threads: 1 });
    cleanups.push(() => sandbox.close());
    const worker = startWorker(app, { deps: { sandbox } });
    cleanups.push(() => worker.stop());
    await worker.drain();
    const rows = await ledgerOf(app, filtered.id);
    expect(rows.map((r) => [r.outcome, r.detail])).toEqual([["filtered", "skipped: a draft"]]);
  });

  test("email: the same message delivered again is a deduplicated row naming the message and the earlier run", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T12:00:00.000Z", env: { INBOUND_DOMAIN: "hooks.example" } });
    cleanups.push(() => app.cleanup());
    const applet = await app.applets.create({ name: "invoices", definition: { version: 1, trigger: { type: "email", config: { to_alias: "invoices" } }, actions: [{ type: "http", config: { url: SINK, method: "POST" } }] } });
    const raw = readFileSync(new URL("../../fixtures/inbound/plain.eml", import.meta.url));
    expect(await deliver(app, raw, ["invoices@hooks.example"])).toBe(" (1 event)");
    app.clock.advance(1000);
    expect(await deliver(app, raw, ["invoices@hooks.example"])).toBe(" (duplicate)");
    const rows = await ledgerOf(app, applet.id);
    const fired = rows.find((r) => r.outcome === "fired")!;
    expect(rows.find((r) => r.outcome === "deduplicated")).toMatchObject({
      dedupeKey: "<CAF3x9qWz1-plain-2026@mail.example.com>",
      runId: fired.runId,
      detail: "the message <CAF3x9qWz1-plain-2026@mail.example.com> was already delivered; the earlier run stands",
    });
  });

  test("email: a message to a disabled applet is a disabled row with its reason, one to a paused applet a paused row, counted per minute; nothing runs", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T12:00:00.000Z", env: { INBOUND_DOMAIN: "hooks.example" } });
    cleanups.push(() => app.cleanup());
    const applet = await app.applets.create({ name: "invoices", enabled: false, definition: { version: 1, trigger: { type: "email", config: { to_alias: "invoices" } }, actions: [{ type: "http", config: { url: SINK, method: "POST" } }] } });
    const raw = readFileSync(new URL("../../fixtures/inbound/plain.eml", import.meta.url));
    expect(await deliver(app, raw, ["invoices@hooks.example"])).toBe(" (applet disabled)");
    app.clock.advance(1000);
    await deliver(app, raw, ["invoices@hooks.example"]);
    expect(await ledgerOf(app, applet.id)).toMatchObject([{ at: "2026-03-07T12:00:00.000Z", outcome: "disabled", count: 2, runId: null, detail: "the applet is disabled; the message was accepted (250) and nothing ran" }]);
    // Paused by auto-pause: said with its reason (no store method sets it but a finish after failures: written directly).
    await app.sql.run("UPDATE applets SET paused_reason = ? WHERE id = ?", "Paused after 5 failed runs in a row", applet.id);
    app.clock.set("2026-03-07T12:05:00.000Z");
    await deliver(app, raw, ["invoices@hooks.example"]);
    expect((await ledgerOf(app, applet.id, "paused")).map((r) => [r.at, r.detail, r.count])).toEqual([["2026-03-07T12:05:00.000Z", "the applet is paused (Paused after 5 failed runs in a row); nothing ran", 1]]);
    expect(await runsOf(app.store, applet.id)).toEqual([]);
    expect(await eventsOf(app.store, applet.id)).toEqual([]);
  });

  test("webhooks: deduplicated (which key, which earlier run), refused by signature or size (counted per minute), disabled and paused, each with its reason; an accepted one is its run", async () => {
    const app = setup();
    const { base, ingress } = await serve(app);
    const applet = await app.applets.create({ name: "signed", definition: { ...webhookToHttp(SINK), trigger: { type: "webhook", config: { dedupe_path: "id" } } } });
    const url = `${base}/api/hooks/${applet.id}/${applet.webhookToken}`;
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
    const first = (await (await post({ id: "order-1" })).json()) as { run_id: string };
    app.clock.advance(1000);
    expect((await (await post({ id: "order-1" })).json()) as object).toMatchObject({ duplicate: true });
    expect((await post("x".repeat(1024 * 1024 + 10))).status).toBe(413);
    expect((await post("y".repeat(1024 * 1024 + 10))).status).toBe(413);
    await ingress.flushLedger();
    const rows = await ledgerOf(app, applet.id);
    const dup = rows.find((r) => r.outcome === "deduplicated")!;
    expect(dup).toMatchObject({ dedupeKey: "order-1", runId: first.run_id, detail: 'the key "order-1" was already delivered; the earlier run stands' });
    const refused = rows.filter((r) => r.outcome === "refused");
    expect(refused.map((r) => [r.count, r.detail])).toEqual([[2, "the body was larger than 1 MB (answered 413)"]]);
    expect(rows.find((r) => r.outcome === "fired")).toMatchObject({ runId: first.run_id });

    // A signed webhook with a wrong signature.
    const secret = "s3cret";
    const signed = await app.applets.create({ name: "github", definition: { ...webhookToHttp(SINK), trigger: { type: "webhook", config: { verify: "github", hmac_secret: secret } } } });
    const body = JSON.stringify({ a: 1 });
    const good = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
    const signedUrl = `${base}/api/hooks/${signed.id}/${signed.webhookToken}`;
    const bad = await fetch(signedUrl, { method: "POST", headers: { "content-type": "application/json", "x-hub-signature-256": good.replace(/.$/, "0") }, body });
    expect(bad.status).toBe(401);
    await ingress.flushLedger();
    const sig = await ledgerOf(app, signed.id, "refused");
    expect(sig.length).toBe(1);
    expect(sig[0]!.detail).toMatch(/^github: .*\(answered 401\)$/);

    // Disabled by the user, then paused by auto-pause.
    await app.store.applets.setEnabled(applet.id, false, app.clock.now().toISOString());
    await post({ id: "order-2" });
    await ingress.flushLedger();
    expect((await ledgerOf(app, applet.id, "disabled")).map((r) => r.detail)).toEqual(["the applet is disabled; the request was answered 200 and nothing ran"]);
    // The reason auto-pause leaves (no store method sets it but a finish after failures).
    await app.sql.run("UPDATE applets SET paused_reason = ? WHERE id = ?", "Paused after 5 failed runs in a row", applet.id);
    app.clock.advance(60_000);
    await post({ id: "order-3" });
    await ingress.flushLedger();
    expect((await ledgerOf(app, applet.id, "paused")).map((r) => r.detail)).toEqual(["the applet is paused (Paused after 5 failed runs in a row); nothing ran"]);

    // /metrics counts the ledger's stored rows by outcome.
    const text = (await renderMetrics(await collectHealthFigures(app))).body;
    expect(text).toMatch(/whenthen_fire_ledger_entries\{outcome="refused"\} 3/);
    expect(text).toMatch(/whenthen_fire_ledger_entries\{outcome="deduplicated"\} 1/);

    // Retention bounds the stored rows like the runs.
    app.clock.advance(app.config.runRetentionDays * 24 * HOUR + HOUR);
    await runRetention(app, app.clock.now(), { holder: "r", pauseMs: 0 });
    expect((await app.store.fires.list(applet.id, { outcome: "refused", limit: 10 })).entries).toEqual([]);
  });

  test("a webhook applet expecting one event every 24 h alerts once after 24 h of silence and sends one recovery notice", async () => {
    const app = setup("2026-03-07T12:00:00.000Z");
    await app.store.alerts.saveSettings({ channel: { type: "http", config: { url: "https://alerts.test/hook" } }, windowMinutes: 15, triggerThreshold: 3, autoPause: false, autoPauseAfter: 5 }, app.clock.now().toISOString());
    const { base } = await serve(app);
    const applet = await app.applets.create({ name: "orders", definition: webhookToHttp(SINK) });
    await app.store.fires.setExpectation(applet.id, 24, app.clock.now().toISOString());
    await fetch(`${base}/api/hooks/${applet.id}/${applet.webhookToken}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    const quietAlerts = async () => (await alertsOf(app.store, applet.id)).map((a) => ({ kind: a.kind, detail: a.detail }));

    app.clock.set("2026-03-08T11:59:00.000Z"); // 23 h 59 min: not yet
    expect((await checkQuiet(app)).quiet).toEqual([]);
    app.clock.set("2026-03-08T14:00:00.000Z"); // 26 h
    expect((await checkQuiet(app)).quiet).toEqual([applet.id]);
    app.clock.set("2026-03-08T20:00:00.000Z");
    expect((await checkQuiet(app)).quiet).toEqual([]); // still quiet: no second alert
    const alerts = await quietAlerts();
    expect(alerts.length).toBe(1);
    expect(alerts[0]!.kind).toBe("quiet");
    expect(alerts[0]!.detail.text).toBe("No webhook for 26 h; one is expected every 24 h. Last one: 2026-03-07 12:00 UTC.");
    expect((await quietApplets(app, app.clock.now())).quiet.has(applet.id)).toBe(true);

    await fetch(`${base}/api/hooks/${applet.id}/${applet.webhookToken}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    app.clock.advance(60_000);
    expect((await checkQuiet(app)).recovered).toEqual([applet.id]);
    expect((await checkQuiet(app)).recovered).toEqual([]);
    const after = await quietAlerts();
    expect(after.map((a) => [a.kind, a.detail.of ?? null])).toEqual([
      ["quiet", null],
      ["recovery", "quiet"],
    ]);
    expect(after[1]!.detail.text).toBe("Events came back: the newest at 2026-03-08 20:00 UTC.");
    // Two workers checking at once record one alert.
    app.clock.advance(25 * HOUR);
    const peer = createTestApp({ peerOf: app });
    cleanups.push(() => peer.store.close());
    const [a, b] = await Promise.all([checkQuiet(app), checkQuiet(peer)]);
    expect(a.quiet.length + b.quiet.length).toBe(1);
  });

  test("a schedule whose slot passed without a fire beyond the grace is quiet (derived from its cron), and not once it fires", async () => {
    const app = setup();
    const applet = await app.applets.create({
      name: "hourly",
      definition: { version: 1, trigger: { type: "schedule", config: { cron: "0 * * * *", timezone: "UTC" } }, actions: [{ type: "http", config: { url: SINK, method: "POST" } }] },
    });
    app.clock.set("2026-03-07T13:10:00.000Z");
    expect((await quietApplets(app, app.clock.now())).quiet.size).toBe(0);
    app.clock.set("2026-03-07T13:20:00.000Z");
    const q = (await quietApplets(app, app.clock.now())).quiet.get(applet.id);
    expect(q?.text).toBe("No scheduled fire for 20 min: the one due at 2026-03-07 13:00 UTC has not happened (is the worker running?).");
    expect((await checkQuiet(app)).quiet).toEqual([applet.id]);
    await runSchedulerTick(app, app.clock.now(), { holder: "w" });
    expect((await checkQuiet(app)).recovered).toEqual([applet.id]);
  });
});
