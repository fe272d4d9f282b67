/**
 * Memory under steady load: the production processes take 100 webhooks/s (an http action
 * each, to a local sink) for BENCH_STEADY_MINUTES (default 20: BENCH_STEADY_WARMUP_MINUTES of warm-up,
 * default 10, then 10 measured), RSS sampled every 10 s. The figure is the slope of a least-squares
 * line through the measured samples, in MB per 10 minutes: memory must not grow with the runs stored
 * meanwhile. The warm-up is 10 minutes because that is how long the web process takes to size its
 * heap for this load (measured from inside in a 30-minute run, bench/RESULTS.md): V8's young
 * generation doubles from 16 to 32 MB in the third minute (the ~15 MB step in the RSS) and the old
 * space grows from 32 to 35 MB until about the eighth; from then on RSS is flat (164–167 MB over the
 * next 22 minutes). The per-minute RSS of the whole run is in the notes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { createApp } from "@/lib/app";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { freePorts, requireBuild, rssMb, start, waitHealthy, type Proc } from "./processes";
import type { BenchFigure } from "./types";

const MINUTES = Number(process.env.BENCH_STEADY_MINUTES ?? 20);
const WARM_UP_MINUTES = Math.min(Number(process.env.BENCH_STEADY_WARMUP_MINUTES ?? 10), MINUTES / 2);
const RATE = 100;
const r1 = (v: number) => Math.round(v * 10) / 10;

/** Least-squares slope of y over x. */
function slope(points: [number, number][]): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

export default async function bench(): Promise<BenchFigure[]> {
  requireBuild();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-steady-"));
  const procs: Proc[] = [];
  const [sinkPort, port, smtpPort] = (await freePorts(3)) as [number, number, number];
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, NODE_ENV: "production", LOG_LEVEL: "warn", NEXT_TELEMETRY_DISABLED: "1", ALLOW_PRIVATE_URLS: "true" };
    const sink = start("bench/servers/sink.ts", { ...env, PORT: String(sinkPort) }, { tsx: true });
    procs.push(sink);
    await new Promise((r) => sink.child.once("message", r));
    const app = createApp({ env: { DATA_DIR: dataDir, ALLOW_PRIVATE_URLS: "true" }, log: silentLogger });
    const service = createAppletService(app);
    const hooks: string[] = [];
    for (let i = 0; i < 10; i++) {
      const a = await service.create({
        name: `steady ${i}`,
        definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: `http://127.0.0.1:${sinkPort}/in`, method: "POST", body: { n: "{{trigger.body.n}}" } } }] },
      });
      hooks.push(`/api/hooks/${a.id}/${a.webhookToken}`);
    }
    const appEnv = { ...env, PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: `http://127.0.0.1:${port}`, SMTP_INBOUND_PORT: String(smtpPort) };
    // --expose-gc only lets the bench ask for a full collection before reading the heap.
    const worker = start("dist/worker.mjs", appEnv, { exposeGc: true });
    const web = start("dist/server.mjs", appEnv, { exposeGc: true });
    procs.push(worker, web);
    await waitHealthy(`http://127.0.0.1:${port}`, [web, worker]);

    const samples: { t: number; web: number; worker: number }[] = [];
    const heaps: { t: number; web: number; worker: number }[] = [];
    const t0 = Date.now();
    const sampler = setInterval(() => samples.push({ t: (Date.now() - t0) / 60_000, web: rssMb(web.pid).now, worker: rssMb(worker.pid).now }), 10_000);
    // The heap each process retains after a full collection, once when the warm-up ends and once
    // at the end: two forced collections only, so the RSS samples show the heap as it runs.
    const heapAt = async () => {
      const t = (Date.now() - t0) / 60_000;
      const [w, k] = await Promise.all([web.eld({ gc: true }), worker.eld({ gc: true })]);
      heaps.push({ t, web: w.heapUsed, worker: k.heapUsed });
    };
    const firstHeap = setTimeout(() => void heapAt(), WARM_UP_MINUTES * 60_000);
    const lastHeap = setTimeout(() => void heapAt(), MINUTES * 60_000 - 5_000);
    const load = await autocannon({
      url: `http://127.0.0.1:${port}`,
      connections: 10,
      overallRate: RATE,
      duration: MINUTES * 60,
      requests: hooks.map((p) => ({ method: "POST" as const, path: p, headers: { "content-type": "application/json" }, body: '{"n":1}' })),
    });
    clearInterval(sampler);
    clearTimeout(firstHeap);
    clearTimeout(lastHeap);
    const stored = (sqliteOf(app.store).prepare("SELECT COUNT(*) AS n FROM runs").get() as { n: number }).n;
    void app.close();

    const measured = samples.filter((s) => s.t >= WARM_UP_MINUTES);
    const measuredHeaps = heaps;
    const per10 = (key: "web" | "worker") => slope(measured.map((s) => [s.t, s[key]])) * 10;
    const heapPer10 = (key: "web" | "worker") => slope(measuredHeaps.map((s) => [s.t, s[key]])) * 10;
    const range = (key: "web" | "worker") => `${r1(Math.min(...measured.map((s) => s[key])))}–${r1(Math.max(...measured.map((s) => s[key])))} MB`;
    const total = per10("web") + per10("worker");
    // The RSS at each whole minute (the first sample of it), warm-up included.
    const byMinute = (key: "web" | "worker") =>
      Array.from({ length: Math.ceil(MINUTES) }, (_, m) => samples.find((s) => s.t >= m)?.[key])
        .filter((v): v is number => v !== undefined)
        .map((v) => Math.round(v))
        .join(" ");
    return [
      {
        name: `RSS slope under ${RATE} webhooks/s after ${WARM_UP_MINUTES} min warm-up, web + worker`,
        unit: "MB/10 min",
        value: total,
        target: "<= 5",
        notes: `${r1(MINUTES - WARM_UP_MINUTES)} min measured, ${measured.length} samples; web ${r1(per10("web"))} (${range("web")}), worker ${r1(per10("worker"))} (${range("worker")}); ${load.requests.total} webhooks, ${load.non2xx} not 202, ${stored} runs stored, p99 ${load.latency.p99} ms; RSS by minute from the start, web: ${byMinute("web")} MB; worker: ${byMinute("worker")} MB`,
      },
      {
        name: "heap retained after a full GC, end of warm-up → end of the load, per 10 min, web + worker",
        unit: "MB/10 min",
        value: heapPer10("web") + heapPer10("worker"),
        notes: `web ${r1(heapPer10("web"))} (${r1(measuredHeaps[0]?.web ?? NaN)} → ${r1(measuredHeaps.at(-1)?.web ?? NaN)} MB), worker ${r1(heapPer10("worker"))} (${r1(measuredHeaps[0]?.worker ?? NaN)} → ${r1(measuredHeaps.at(-1)?.worker ?? NaN)} MB); a leak shows here even when the heap is not yet collected`,
      },
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
