import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterEach, describe, expect, test } from "vitest";
import { createApp, type App } from "@/lib/app";
import { createAuth } from "@/lib/auth";
import { stampClientIp } from "@/lib/auth/client-ip";
import { createApiTokens } from "@/lib/auth/tokens";
import { ManualClock } from "@/lib/core/clock";
import { silentLogger } from "@/lib/core/log";
import { createIngress } from "@/lib/http/ingress";
import { createMetricsRoute } from "@/lib/http/metrics";
import { engines, type TestEngine } from "../helpers/engines";
import { spawnWorkerProcess, startSink, type WorkerProcess } from "../helpers/processes";
import { createTestSchema, urlWithSchema } from "../helpers/postgres";

/**
 * GET /metrics, on each engine: the web process's own ingress and metrics route on a real
 * port, a real worker process (worker/index.ts) on the same database. What the worker counts
 * reaches /metrics through its heartbeat; the answer is read with a Prometheus text-format parser
 * (parse-prometheus-text-format), not with prom-client's own registry.
 */

type Family = { name: string; type: string; metrics: { value?: string; labels?: Record<string, string>; count?: string; sum?: string; buckets?: Record<string, string> }[] };

/** Sums a counter's or gauge's samples matching `labels`. */
function sample(families: Family[], name: string, labels: Record<string, string> = {}): number {
  const f = families.find((x) => x.name === name);
  if (!f) return 0;
  return f.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)).reduce((s, m) => s + Number(m.value), 0);
}

/**
 * A histogram's observation count (its +Inf bucket). The parser folds the buckets of every
 * labelled series of a histogram into one map and keeps no labels, so this holds for a histogram
 * with one series only, as run_duration_seconds has here (status succeeded, one worker).
 */
function histogramCount(families: Family[], name: string): number {
  const f = families.find((x) => x.name === name);
  return (f?.metrics ?? []).reduce((s, m) => s + Number(m.buckets?.["+Inf"] ?? m.count ?? 0), 0);
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const KEY = randomBytes(32).toString("base64");

/** The database for one test: env for both processes (SQLite: one DATA_DIR; PostgreSQL: a fresh schema). */
async function database(engine: TestEngine): Promise<{ env: Record<string, string>; dataDir: string }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-metrics-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = { DATA_DIR: dataDir, SECRETS_KEY: KEY, SESSION_SECRET: "metrics-test-session-secret", ALLOW_PRIVATE_URLS: "true", INBOUND_EMAIL: "false" };
  if (engine.name === "postgres") {
    const { schema, drop } = await createTestSchema("metrics");
    cleanups.push(drop);
    env.DATABASE_URL = urlWithSchema(schema);
  }
  return { env, dataDir };
}

/** The web side: ingress (webhooks) and /metrics on a real port, an admin and a read-only token. */
async function web(env: Record<string, string>, clock?: ManualClock): Promise<{ app: App; url: string; token: string; fullToken: string }> {
  const app = createApp({ env, log: silentLogger, role: "web", clock });
  await app.store.ready?.();
  cleanups.push(() => app.close());
  const auth = createAuth(app);
  const ingress = createIngress(app);
  const metrics = createMetricsRoute(app, auth);
  const server: Server = createServer((req, res) => {
    if (ingress(req, res)) return;
    stampClientIp(req);
    if (metrics(req, res)) return;
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  const now = app.clock.now().toISOString();
  await app.store.users.insert({ id: "admin", email: "admin@example.com", passwordHash: "unused", now });
  const tokens = createApiTokens(app);
  const { token } = await tokens.create({ name: "prometheus", read_only: true });
  const { token: fullToken } = await tokens.create({ name: "full" });
  return { app, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token, fullToken };
}

async function scrape(url: string, token: string): Promise<Family[]> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusTextFormat(await res.text());
}

const hookApplet = async (app: App, id: string, sinkUrl: string) => {
  await app.store.applets.insert({
    id,
    name: `Hook ${id}`,
    enabled: true,
    triggerType: "webhook",
    definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: sinkUrl, method: "POST", body: { n: "{{trigger.body.n}}" } } }] },
    webhookToken: `token-${id}-0123456789abcdef0123456789`,
    now: app.clock.now().toISOString(),
  });
  return `/api/hooks/${id}/token-${id}-0123456789abcdef0123456789`;
};

for (const engine of engines) {
  describe.skipIf(engine.skip !== null)(`${engine.name}${engine.skip ? ` (skipped: ${engine.skip})` : ""}`, () => {
    test("/metrics parses with a Prometheus text-format parser and its counters move as runs execute in the worker process", async () => {
      const { env } = await database(engine);
      const { app, url, token } = await web(env);
      const sink = await startSink();
      cleanups.push(() => sink.close());
      const hook = await hookApplet(app, "m1", sink.url);

      const worker: WorkerProcess = spawnWorkerProcess({ ...env, WORKER_LEASE_SECONDS: "3", LOG_LEVEL: "info" });
      cleanups.push(() => worker.kill());
      await worker.waitFor(/worker started/, 60_000);

      const before = await scrape(url, token);
      const families = new Set(before.map((f) => f.name));
      for (const name of [
        "whenthen_runs",
        "whenthen_queue_depth",
        "whenthen_queue_oldest_due_age_seconds",
        "whenthen_runs_started_total",
        "whenthen_runs_finished_total",
        "whenthen_run_duration_seconds",
        "whenthen_webhook_requests_total",
        "whenthen_schedule_lateness_seconds",
        "whenthen_poll_errors_total",
        "whenthen_smtp_messages_total",
        "whenthen_alert_sends_total",
      ]) {
        expect(families, name).toContain(name);
      }
      expect(before.find((f) => f.name === "whenthen_run_duration_seconds")!.type).toBe("HISTOGRAM");
      expect(sample(before, "whenthen_runs_finished_total")).toBe(0);
      // The web's counters belong to this test process, which other tests of the file share: deltas.
      const accepted = sample(before, "whenthen_webhook_requests_total", { outcome: "accepted", process: "web" });
      const notFound = sample(before, "whenthen_webhook_requests_total", { outcome: "not_found", process: "web" });

      for (let n = 1; n <= 3; n++) {
        const res = await fetch(url + hook, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ n }) });
        expect(res.status).toBe(202);
      }
      expect((await fetch(`${url}/api/hooks/m1/wrong-token`, { method: "POST" })).status).toBe(404);

      // The worker's counters arrive with its next heartbeat (every second here): scrape until they do.
      let after = await scrape(url, token);
      for (let i = 0; i < 200 && sample(after, "whenthen_runs_finished_total", { status: "succeeded" }) < 3; i++) {
        await new Promise((r) => setTimeout(r, 100));
        after = await scrape(url, token);
      }
      expect(sample(after, "whenthen_runs_finished_total", { status: "succeeded" })).toBe(3);
      expect(sample(after, "whenthen_runs_started_total")).toBe(3);
      expect(histogramCount(after, "whenthen_run_duration_seconds")).toBe(3);
      // Counted in the worker process and labelled with it, not with the web's.
      expect(sample(after, "whenthen_runs_started_total", { process: "web" })).toBe(0);
      expect(sample(after, "whenthen_webhook_requests_total", { outcome: "accepted", process: "web" }) - accepted).toBe(3);
      expect(sample(after, "whenthen_webhook_requests_total", { outcome: "not_found", process: "web" }) - notFound).toBe(1);
      // From the store: the applet's three runs, an empty queue.
      expect(sample(after, "whenthen_runs", { applet: "m1", status: "succeeded" })).toBe(3);
      expect(sample(after, "whenthen_queue_depth")).toBe(0);
      expect(sample(after, "whenthen_workers_live")).toBe(1);
      expect(sink.bodies).toHaveLength(3);
    }, 120_000);

    test("/metrics refuses a request without a token, with a bad or revoked one, and with only a session; the queue gauges follow the clock", async () => {
      const { env } = await database(engine);
      const clock = new ManualClock("2026-03-07T12:00:00.000Z");
      const { app, url, token, fullToken } = await web(env, clock);

      const none = await fetch(`${url}/metrics`);
      expect(none.status).toBe(401);
      expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(((await none.json()) as { error: string }).error).toMatch(/API token/);
      expect((await fetch(`${url}/metrics`, { headers: { authorization: "Bearer wt_" + "x".repeat(43) } })).status).toBe(401);
      expect((await fetch(`${url}/metrics`, { headers: { cookie: "whenthen_session=anything" } })).status).toBe(401);
      expect((await fetch(`${url}/metrics`, { method: "POST", headers: { authorization: `Bearer ${token}` } })).status).toBe(405);
      // A full token works too; a revoked one no longer does.
      expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${fullToken}` } })).status).toBe(200);
      const tokens = createApiTokens(app);
      const full = (await tokens.list()).find((t) => t.name === "full")!;
      await tokens.revoke(full.id);
      expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${fullToken}` } })).status).toBe(401);

      // No worker runs: a queued run waits, and its wait grows with the clock.
      const hook = await hookApplet(app, "q1", "http://127.0.0.1:9/never");
      expect((await fetch(url + hook, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(202);
      clock.advance(90_000);
      const m = await scrape(url, token);
      expect(sample(m, "whenthen_queue_depth")).toBe(1);
      expect(sample(m, "whenthen_queue_oldest_due_age_seconds")).toBe(90);
      expect(sample(m, "whenthen_runs", { applet: "q1", applet_name: "Hook q1", status: "queued" })).toBe(1);
      expect(sample(m, "whenthen_workers_live")).toBe(0);
    }, 60_000);
  });
}
