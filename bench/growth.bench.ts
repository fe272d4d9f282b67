/**
 * Growth: what a long-lived install looks like. 1,000 applets and 1,000,000 stored runs
 * (BENCH_GROWTH_RUNS), 90 % of them older than RUN_RETENTION_DAYS; then the production processes
 * (node dist/server.mjs, dist/worker.mjs) on that database: idle RSS, RSS after the pages that read
 * runs, page times; then retention as the worker runs it (batched deletes + incremental vacuum)
 * while webhooks keep arriving at 100/s: file size before and after, webhook latency meanwhile.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { createApp } from "@/lib/app";
import type { Applet } from "@/lib/db/store";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { runRetention } from "@/lib/tick/retention";
import { freePorts, requireBuild, rssMb, start, waitHealthy, type Proc } from "./processes";
import type { BenchFigure } from "./types";

const RUNS = Number(process.env.BENCH_GROWTH_RUNS ?? 1_000_000);
const APPLETS = 1_000;
const DAY = 86_400_000;
const ADMIN = { email: "bench@example.com", password: "bench-password-123" };
const r1 = (v: number) => Math.round(v * 10) / 10;
const mb = (bytes: number) => bytes / 2 ** 20;

export default async function bench(): Promise<BenchFigure[]> {
  requireBuild();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-growth-"));
  const procs: Proc[] = [];
  try {
    const app = createApp({ env: { DATA_DIR: dataDir }, log: silentLogger });
    const service = createAppletService(app);
    const applets: Applet[] = [];
    for (let i = 0; i < APPLETS; i++) {
      applets.push(await service.create({
        name: `applet ${i}`,
        definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/in", method: "POST", body: { n: "{{trigger.body.n}}" } } }] },
      }));
    }

    // A webhook's stored payload as the ingress writes it (~700 bytes).
    const payload = (i: number) =>
      JSON.stringify({
        body: { title: `Order #${i} paid`, amount: 59.9, customer: { email: `c${i}@example.com`, name: "Ada Lovelace" }, items: [{ sku: "A-1", qty: 2 }] },
        headers: { "content-type": "application/json", "user-agent": "Shopify-Captain-Hook", "x-request-id": `req-${i}`, accept: "*/*", host: "automations.example.com" },
        query: {},
        method: "POST",
        received_at: new Date().toISOString(),
      });
    const now = Date.now();
    const fillStart = performance.now();
    for (let start = 0; start < RUNS; start += 5_000) {
      const batch = Array.from({ length: Math.min(5_000, RUNS - start) }, (_, k) => {
        const i = start + k;
        // 90 % from 31–60 days ago (past the default 30-day retention), 10 % from the last day.
        const age = i % 10 === 0 ? (i % 86_400) * 1000 : 31 * DAY + (i % (29 * 86_400)) * 1000;
        return { appletId: applets[i % APPLETS]!.id, source: "webhook" as const, dedupeKey: null, payloadJson: payload(i), receivedAt: new Date(now - age).toISOString(), maxAttempts: 3 };
      });
      await app.store.runs.ingestMany(batch);
    }
    // Finished runs (retention keeps queued ones); in slices so the WAL stays small.
    const maxRowid = (sqliteOf(app.store).prepare("SELECT MAX(rowid) AS m FROM runs").get() as { m: number }).m;
    const finish = sqliteOf(app.store).prepare("UPDATE runs SET status = 'succeeded', steps = '[{\"index\":0,\"type\":\"http\",\"status\":\"succeeded\",\"output\":{\"status\":200}}]' WHERE rowid BETWEEN ? AND ?");
    for (let r = 0; r <= maxRowid; r += 50_000) finish.run(r, r + 49_999);
    const fillSeconds = (performance.now() - fillStart) / 1000;
    sqliteOf(app.store).pragma("wal_checkpoint(TRUNCATE)");
    const fileBytes = () => statSync(app.config.databasePath).size;
    const fullBytes = fileBytes();

    // How fast this disk rewrites the database: what converting an old data dir (one VACUUM) costs.
    const copy = path.join(dataDir, "vacuum-into.db");
    const vacStart = performance.now();
    sqliteOf(app.store).exec(`VACUUM INTO '${copy}'`);
    const vacuumMbPerS = mb(fullBytes) / ((performance.now() - vacStart) / 1000);
    rmSync(copy);

    const [port, smtpPort] = (await freePorts(2)) as [number, number];
    const base = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, NODE_ENV: "production", LOG_LEVEL: "warn", NEXT_TELEMETRY_DISABLED: "1", PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: base, SMTP_INBOUND_PORT: String(smtpPort), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, WORKER_CONCURRENCY: "4" };
    const worker = start("dist/worker.mjs", env);
    const web = start("dist/server.mjs", env);
    procs.push(worker, web);
    await waitHealthy(base, [web, worker]);
    await new Promise((r) => setTimeout(r, 3000));
    const idle = { web: rssMb(web.pid).now, worker: rssMb(worker.pid).now };

    const login = await fetch(`${base}/api/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ADMIN) });
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0]!;
    const pageMs: Record<string, number> = {};
    for (const page of ["/", "/runs", "/api/runs?limit=50", `/applets/${applets[0]!.id}`]) {
      const times: number[] = [];
      for (let i = 0; i < 10; i++) {
        const t = performance.now();
        const res = await fetch(base + page, { headers: { cookie }, redirect: "manual" });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`bench: ${page} answered ${res.status}`);
        times.push(performance.now() - t);
      }
      pageMs[page] = times.sort((a, b) => a - b)[5]!;
    }
    const afterPages = { web: rssMb(web.pid).now, worker: rssMb(worker.pid).now };

    // Retention as the worker runs it, while a sender keeps posting at 100 webhooks/s.
    const hook = `/api/hooks/${applets[1]!.id}/${applets[1]!.webhookToken}`;
    const during = autocannon({ url: base, connections: 10, overallRate: 100, duration: 3600, requests: [{ method: "POST", path: hook, headers: { "content-type": "application/json" }, body: '{"n":1}' }] });
    // The longest single statement of each kind: how long retention holds the write lock at once.
    const longest: Record<string, { ms: number; calls: number }> = {};
    const m = app.store.maintenance as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const name of ["deleteRunsBefore", "deleteEventsBefore", "reclaimStep", "convertToIncremental"]) {
      const fn = m[name]!;
      m[name] = (...args: unknown[]) => {
        const t = performance.now();
        try {
          return fn(...args);
        } finally {
          const l = (longest[name] ??= { ms: 0, calls: 0 });
          l.ms = Math.max(l.ms, performance.now() - t);
          l.calls++;
        }
      };
    }
    const walBytes = () => (existsSync(`${app.config.databasePath}-wal`) ? statSync(`${app.config.databasePath}-wal`).size : 0);
    let walPeak = 0;
    const walTimer = setInterval(() => (walPeak = Math.max(walPeak, walBytes())), 250);
    const retStart = performance.now();
    const r = await runRetention(app, new Date(), { holder: "bench" });
    clearInterval(walTimer);
    const retentionSeconds = (performance.now() - retStart) / 1000;
    during.stop();
    const hooks = await during;
    sqliteOf(app.store).pragma("wal_checkpoint(TRUNCATE)");
    const afterBytes = fileBytes();
    const remaining = (sqliteOf(app.store).prepare("SELECT COUNT(*) AS n FROM runs").get() as { n: number }).n;
    void app.close();

    return [
      { name: `filled: ${APPLETS} applets, ${RUNS.toLocaleString("en-US")} runs stored`, unit: "MB", value: mb(fullBytes), notes: `database file; ${r1(mb(fullBytes) / (RUNS / 1000))} MB per 1,000 runs; filled in ${r1(fillSeconds)} s` },
      { name: "idle RSS on that database, web + worker (production)", unit: "MB", value: idle.web + idle.worker, target: "<= 300", notes: `web ${r1(idle.web)} MB, worker ${r1(idle.worker)} MB` },
      {
        name: "RSS after the pages that read runs, web + worker",
        unit: "MB",
        value: afterPages.web + afterPages.worker,
        notes: `web ${r1(afterPages.web)} MB, worker ${r1(afterPages.worker)} MB; median of 10 loads: ${Object.entries(pageMs).map(([p, ms]) => `${p} ${Math.round(ms)} ms`).join(", ")}`,
      },
      { name: "retention deleting 90 % of the runs: database file after / before", unit: "%", value: (afterBytes / fullBytes) * 100, target: "<= 30", notes: `${r1(mb(fullBytes))} → ${r1(mb(afterBytes))} MB, ${r.deletedEvents.toLocaleString("en-US")} events deleted, ${remaining.toLocaleString("en-US")} runs kept, ${r1(retentionSeconds)} s` },
      { name: "webhooks during that retention run (100/s, 10 connections)", unit: "ms p99", value: hooks.latency.p99, notes: `max ${hooks.latency.max} ms, ${hooks.requests.total} requests, ${hooks.non2xx} not 2xx, ${hooks.errors} errors` },
      {
        name: "longest single retention statement (the write lock held at once)",
        unit: "ms",
        value: Math.max(...Object.values(longest).map((l) => l.ms)),
        notes: `${Object.entries(longest).map(([k, l]) => `${k} ${Math.round(l.ms)} ms max over ${l.calls} calls`).join("; ")}; WAL peak ${r1(mb(walPeak))} MB`,
      },
      { name: "VACUUM speed on this disk (what converting an old data dir costs)", unit: "MB/s", value: vacuumMbPerS, notes: "VACUUM INTO a copy of the full database" },
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
