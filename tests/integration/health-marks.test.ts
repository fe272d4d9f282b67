import { http, HttpResponse } from "msw";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { appletList } from "@/lib/api/queries";
import { streamRuns } from "@/lib/api/stream";
import { watchHealth } from "@/lib/bus/health";
import { loadConfig } from "@/lib/core/config";
import { healthBanner } from "@/lib/health";
import { runSchedulerTick } from "@/lib/tick/tick";
import { listApplets, needsAttention, type ListedApplet } from "@/lib/ui/applet-list";
import { formatAge } from "@/lib/core/overdue";
import { createTestApp, webhookToHttp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { server, useHttpMocks } from "../helpers/http";

/**
 * Health at a glance, on each engine with an injected clock: the applets list's trigger error
 * mark (an RSS applet pointed at a JSON URL), its overdue check and failed runs of 24 h, the
 * "needs attention" filter; the banner's worker and SMTP parts and their push over the stream.
 */
useHttpMocks();

const PRICES = "https://prices.example.test/price.json";
const MIN = 60_000;

const listed = (rows: Awaited<ReturnType<typeof appletList>>): (ListedApplet & { id: string })[] =>
  rows.map((a) => ({
    id: a.id,
    name: a.name,
    enabled: a.enabled,
    triggerType: a.trigger_type,
    createdAt: a.created_at,
    lastStatus: a.last_run_status,
    lastAt: a.last_run_at,
    triggerError: a.trigger_error,
    overdueMs: a.next_check_overdue_ms,
    failed24h: a.failed_24h,
  }));

forEachEngine((engine) => {
  let app: TestApp;
  beforeEach(() => {
    app = createTestApp({ start: "2026-03-07T12:00:00.000Z", engine, env: { WORKER_STALE_SECONDS: "60" } });
  });
  afterEach(async () => {
    await app.cleanup();
  });

  test("the list shows the trigger error mark for an RSS applet pointed at a JSON URL, and an overdue check; needs attention lists them", async () => {
    server.use(http.get(PRICES, () => HttpResponse.json({ price: 2.9, currency: "EUR" })));
    const feed = await app.applets.create({
      name: "Prices as a feed",
      definition: { version: 1, trigger: { type: "rss", config: { url: PRICES, interval_min: 5 } }, actions: webhookToHttp("https://hooks.example.test/x").actions },
    });
    const hook = await app.applets.create({ name: "A webhook", definition: webhookToHttp("https://hooks.example.test/y") });
    // Before the first check: no error, nothing overdue.
    let rows = await appletList(app);
    expect(rows.find((a) => a.id === feed.id)).toMatchObject({ trigger_error: null, next_check_overdue_ms: null });

    await runSchedulerTick(app, app.clock.now());
    rows = await appletList(app);
    const row = rows.find((a) => a.id === feed.id)!;
    expect(row.trigger_error).toMatch(/price\.json is not a readable feed: it is JSON but not a JSON Feed/);
    expect(row.last_run_status).toBeNull();
    const attention = listApplets(listed(rows), { status: "attention" }).items.map((a) => a.id);
    expect(attention).toEqual([feed.id]);
    expect(needsAttention(listed(rows).find((a) => a.id === hook.id)!)).toBe(false);

    // No worker ticks for a while: 12 minutes after the next check was due, it is overdue.
    const next = Date.parse(row.next_check_at!);
    app.clock.set(next + 12 * MIN);
    const late = (await appletList(app)).find((a) => a.id === feed.id)!;
    expect(late.next_check_overdue_ms).toBe(12 * MIN);
    expect(`next check was due ${formatAge(late.next_check_overdue_ms!)} ago`).toBe("next check was due 12 min ago");
    // A disabled applet is not checked, so never overdue.
    await app.applets.setEnabled(feed.id, false);
    expect((await appletList(app)).find((a) => a.id === feed.id)!.next_check_overdue_ms).toBeNull();
  });

  test("the list counts the failed and dead runs of the last 24 h per applet", async () => {
    const a = await app.applets.create({ name: "Flaky", definition: webhookToHttp("https://hooks.example.test/x") });
    const settle = async (status: "failed" | "dead" | "succeeded") => {
      await app.store.runs.ingest({ appletId: a.id, source: "webhook", dedupeKey: null, payloadJson: "{}", receivedAt: app.clock.now().toISOString(), maxAttempts: 1 });
      const run = (await app.store.runs.claim("w", app.clock.now()))!;
      await app.store.runs.finish(run, status, [], status === "succeeded" ? null : "boom", app.clock.now());
      app.clock.advance(MIN);
    };
    await settle("failed");
    app.clock.advance(25 * 60 * MIN);
    await settle("dead");
    await settle("failed");
    await settle("succeeded");
    const row = (await appletList(app)).find((x) => x.id === a.id)!;
    expect(row).toMatchObject({ failed_24h: 2, runs_24h: 3, last_run_status: "succeeded" });
  });

  test("the banner says the worker is stale after WORKER_STALE_SECONDS, and the SMTP receiver when no live worker listens", async () => {
    expect(await healthBanner(app)).toEqual({ worker: { seenAt: null, ageMs: null, queued: 0 }, smtp: null });
    const beat = (smtpPort: number | null) => app.store.workers.heartbeat({ id: "w1", hostname: "h", pid: 1, now: app.clock.now(), leaseMs: 30_000, fault: null, smtpPort });
    await beat(2525);
    expect(await healthBanner(app)).toEqual({ worker: null, smtp: null });
    // A worker without the receiver (INBOUND_EMAIL is on for the web): SMTP is not listening.
    await beat(null);
    expect(await healthBanner(app)).toEqual({ worker: null, smtp: { port: app.config.smtpInboundPort } });
    const off = { ...app, config: { ...app.config, inboundEmail: false } };
    expect(await healthBanner(off)).toEqual({ worker: null, smtp: null });
    // Three minutes without a heartbeat, with a run waiting: the worker banner (SMTP left out).
    const hook = await app.applets.create({ name: "h", definition: webhookToHttp("https://hooks.example.test/x") });
    await app.store.runs.ingest({ appletId: hook.id, source: "webhook", dedupeKey: null, payloadJson: "{}", receivedAt: app.clock.now().toISOString(), maxAttempts: 1 });
    app.clock.advance(60_000);
    expect((await healthBanner(app)).worker).toBeNull();
    app.clock.advance(120_000);
    expect(await healthBanner(app)).toEqual({ worker: { seenAt: "2026-03-07T12:00:00.000Z", ageMs: 180_000, queued: 1 }, smtp: null });
  });

  test("the health watch pushes a change of the banner to an open stream, and a new stream starts with the current one", async () => {
    await app.store.workers.heartbeat({ id: "w1", hostname: "h", pid: 1, now: app.clock.now(), leaseMs: 30_000, fault: null, smtpPort: 2525 });
    const watch = watchHealth(app, { intervalMs: 60_000 });
    try {
      await watch.look();
      expect(app.bus.health()).toEqual({ worker: null, smtp: null });
      const abort = new AbortController();
      const res = streamRuns(app.bus, new Request("http://localhost/api/stream", { signal: abort.signal }), { nowMs: () => app.clock.now().getTime() });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      const until = async (pattern: RegExp) => {
        while (!pattern.test(text)) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`stream ended before ${pattern}: ${text}`);
          text += decoder.decode(value);
        }
      };
      await until(/event: health\ndata: \{"worker":null,"smtp":null\}\n\n/);
      app.clock.advance(61_000);
      await watch.look();
      await until(/event: health\ndata: \{"worker":\{"seenAt":"2026-03-07T12:00:00\.000Z","ageMs":61000,"queued":0\},"smtp":null\}/);
      // The same state again publishes nothing new; the heartbeat coming back does.
      const before = text.length;
      app.clock.advance(5_000);
      await watch.look();
      await app.store.workers.heartbeat({ id: "w1", hostname: "h", pid: 1, now: app.clock.now(), leaseMs: 30_000, fault: null, smtpPort: 2525 });
      await watch.look();
      await until(/\{"worker":null,"smtp":null\}\n\n$/);
      expect(text.slice(before).match(/event: health/g)).toHaveLength(1);
      abort.abort();
    } finally {
      watch.stop();
    }
  });
});

describe("needs attention and paused, in the list's pure filter", () => {
  test("an auto-paused applet needs attention and is what 'Paused' lists; a plainly disabled one is neither", () => {
    const base = { enabled: false, triggerType: "webhook", createdAt: "2026-03-07T12:00:00.000Z", lastStatus: "succeeded", lastAt: null, triggerError: null };
    const all = [
      { ...base, id: "p", name: "Paused", pausedReason: "Paused after 5 failed runs in a row" },
      { ...base, id: "d", name: "Disabled", pausedReason: null },
      { ...base, id: "e", name: "Enabled", enabled: true },
    ];
    expect(listApplets(all, { status: "attention" }).items.map((a) => a.id)).toEqual(["p"]);
    expect(listApplets(all, { status: "paused" }).items.map((a) => a.id)).toEqual(["p"]);
    expect(listApplets(all, { status: "disabled" }).items.map((a) => a.id)).toEqual(["d", "p"]);
  });
});

describe("WORKER_STALE_SECONDS", () => {
  test("defaults to 60 s and must exceed the heartbeat interval, naming both variables", () => {
    expect(loadConfig({ DATA_DIR: "/tmp/x" }).workerStaleMs).toBe(60_000);
    expect(loadConfig({ DATA_DIR: "/tmp/x", WORKER_STALE_SECONDS: "4", WORKER_LEASE_SECONDS: "3" }).workerStaleMs).toBe(4_000);
    expect(() => loadConfig({ DATA_DIR: "/tmp/x", WORKER_STALE_SECONDS: "10" })).toThrow(/WORKER_STALE_SECONDS \(10\) must be more than the worker's heartbeat interval \(10 s: a third of WORKER_LEASE_SECONDS/);
  });
});
