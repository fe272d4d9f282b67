/**
 * Webhook ingest and end-to-end throughput, each in its own processes as in production:
 *  1. baseline: plain node:http + one prepared SQLite insert per request (same run, same machine);
 *  2. ingest: the lean webhook ingress with the real worker draining the queue meanwhile;
 *  3. end to end: N webhooks → http action to a local sink → succeeded, timed until the last run settles.
 * Load comes from autocannon at 50 connections on loopback.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import type { BenchFigure } from "./types";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const APPLETS = 20;
const E2E_RUNS = Number(process.env.BENCH_E2E_RUNS ?? 10_000);

// BENCH_CPU_PROF=<dir>: every child process writes a V8 CPU profile there (open in Chrome DevTools).
const profileArgs = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`] : [];

export default async function bench(): Promise<BenchFigure[]> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-"));
  const children: ChildProcess[] = [];
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "warn", NODE_ENV: "production" };
  const start = async (script: string, extra: Record<string, string>) => {
    const child = fork(path.join(root, script), [], { env: { ...env, ...extra }, execArgv: ["--import", "tsx", ...profileArgs], stdio: ["ignore", "inherit", "inherit", "ipc"] });
    children.push(child);
    if (script.startsWith("worker/")) return child;
    await new Promise<void>((resolve, reject) => {
      child.once("message", () => resolve());
      child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
    });
    return child;
  };
  try {
    const [sinkPort, basePort, webPort, smtpPort] = [4811, 4812, 4813, 4814];
    const sink = await start("bench/servers/sink.ts", { PORT: String(sinkPort) });

    const baseline = await load(`http://127.0.0.1:${basePort}/`, await start("bench/servers/baseline.ts", { PORT: String(basePort) }).then(() => [`/`]));
    children.pop()?.kill("SIGTERM");

    // Applets whose action posts to the sink.
    const app = createApp({ env: { DATA_DIR: dataDir, ALLOW_PRIVATE_URLS: "true" }, log: silentLogger });
    const service = createAppletService(app);
    const hooks = Array.from({ length: APPLETS }, (_, i) => {
      const a = service.create({
        name: `bench ${i}`,
        definition: {
          version: 1,
          trigger: { type: "webhook", config: {} },
          actions: [{ type: "http", config: { url: `http://127.0.0.1:${sinkPort}/in`, method: "POST", body: { title: "{{trigger.body.title}}", n: "{{trigger.body.n}}" } } }],
        },
      });
      return `/api/hooks/${a.id}/${a.webhookToken}`;
    });

    const web = await start("bench/servers/ingest.ts", { PORT: String(webPort) });
    const worker = await start("worker/index.ts", { SMTP_INBOUND_PORT: String(smtpPort) });
    const ingest = await load(`http://127.0.0.1:${webPort}`, hooks);
    const ingested = count(app, "runs");

    // Let the worker finish the ingest backlog before the end-to-end measurement starts.
    await until(() => count(app, "runs", "status IN ('queued','running')") === 0, 600_000);
    const before = count(app, "runs", "status = 'succeeded'");
    const e2eStart = performance.now();
    await load(`http://127.0.0.1:${webPort}`, hooks, E2E_RUNS);
    await until(() => count(app, "runs", "status = 'succeeded'") >= before + E2E_RUNS, 600_000);
    const e2eSeconds = (performance.now() - e2eStart) / 1000;
    const failed = count(app, "runs", "status NOT IN ('succeeded')");
    const webPeakMb = peakRssMb(web.pid);
    const workerPeakMb = peakRssMb(worker.pid);
    sink.send("count");
    const sunk = await new Promise<number>((r) => sink.once("message", (m) => r((m as { count: number }).count)));
    app.close();
    worker.kill("SIGTERM");

    const ratio = ingest.rps / baseline.rps;
    return [
      { name: "baseline: node:http + one prepared SQLite insert, 50 connections", unit: "req/s", value: baseline.rps, notes: `p50 ${baseline.p50} ms, p99 ${baseline.p99} ms` },
      { name: "webhook ingest, 50 connections, worker draining", unit: "req/s", value: ingest.rps, target: ">= 4000", notes: `${ingest.requests} requests, ${ingest.non2xx} not 202, ${ingested} runs stored` },
      { name: "webhook ingest p50", unit: "ms", value: ingest.p50 },
      { name: "webhook ingest p99", unit: "ms", value: ingest.p99, target: "<= 25" },
      { name: "webhook ingest vs baseline", unit: "%", value: ratio * 100, target: ">= 70" },
      {
        name: `end to end: ${E2E_RUNS} webhooks → http action → succeeded`,
        unit: "runs/s",
        value: E2E_RUNS / e2eSeconds,
        target: ">= 1000",
        notes: `${e2eSeconds.toFixed(1)} s, ${APPLETS} applets, WORKER_CONCURRENCY ${process.env.WORKER_CONCURRENCY ?? 4}, ${failed} runs not succeeded, sink saw ${sunk} requests`,
      },
      { name: "peak memory (RSS), webhook ingress process, through both loads", unit: "MB", value: webPeakMb, notes: "the lean ingress as server.ts mounts it, without Next's handler loaded" },
      { name: "peak memory (RSS), worker process, through both loads", unit: "MB", value: workerPeakMb, notes: "executor, scheduler, SMTP receiver and sandbox pool loaded" },
    ];
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The kernel's high-water mark of a process's resident memory (VmHWM), in MB. */
function peakRssMb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

function count(app: ReturnType<typeof createApp>, table: string, where = "1 = 1"): number {
  return (app.db.sqlite.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`).get() as { n: number }).n;
}

async function until(check: () => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("bench: timed out waiting for the worker");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** autocannon round-robin over the paths; a fixed amount of requests when `amount` is given. */
async function load(base: string, paths: string[], amount?: number) {
  const body = JSON.stringify({ title: "Order #1042 paid", amount: 59.9, n: 1 });
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    ...(amount ? { amount } : { duration: SECONDS }),
    requests: paths.map((p) => ({ method: "POST" as const, path: p, headers: { "content-type": "application/json" }, body })),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
  };
}
