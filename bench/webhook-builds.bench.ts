/**
 * Webhook ingest of this build beside an older one (BENCH_BASE_REF, default main before the cuts
 * of the store, the ingress and the executor into per-aggregate and per-job parts), as users run it: `node
 * dist/server.mjs` + `node dist/worker.mjs` on a fresh database, the worker draining meanwhile, 50
 * connections for BENCH_SECONDS (default 10) per trial; the builds alternate for BENCH_ROUNDS
 * rounds (default 5), on SQLite and on PostgreSQL (BENCH_POSTGRES_URL or TEST_POSTGRES_URL).
 *
 * The "webhook" bench's baseline is a plain node:http server, which says how far the app is from
 * the least a server can do; this one says whether a change made the app itself dearer, with the
 * code before it measured in the same run. Figures: the median of the rounds' req/s ratios, and
 * the web process's CPU time per 1,000 webhooks (which contention for the cores moves much less
 * than req/s), both this build against the older one.
 */
import autocannon from "autocannon";
import { olderBuild, oneActionApplet, PG_URL, settle, startBuild, startSink, thisBuild, type Build, type Engine } from "./builds";
import { median, requireBuild } from "./processes";
import type { BenchFigure } from "./types";

const BASE_REF = process.env.BENCH_BASE_REF ?? "150d83a";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const APPLETS = 20;
const r1 = (v: number) => Math.round(v * 10) / 10;

interface Trial {
  rps: number;
  p99: number;
  /** The web process's CPU time (user + system) per 1,000 accepted webhooks. */
  webCpuMs: number;
}

export default async function bench(): Promise<BenchFigure[]> {
  requireBuild();
  const base = olderBuild(BASE_REF, "before the store, ingress and executor cuts");
  const sink = await startSink();
  const applets = Array.from({ length: APPLETS }, (_, i) => ({ name: `bench ${i}`, definition: oneActionApplet(sink.url) }));
  const figures: BenchFigure[] = [];
  try {
    const engines: Engine[] = PG_URL ? ["sqlite", "postgres"] : ["sqlite"];
    for (const engine of engines) {
      const before: Trial[] = [];
      const now: Trial[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        before.push(await trial(base, engine, applets));
        now.push(await trial(thisBuild, engine, applets));
      }
      const ratio = (f: (t: Trial) => number) => now.map((t, i) => (f(t) / f(before[i]!)) * 100);
      const rps = ratio((t) => t.rps);
      const cpu = ratio((t) => t.webCpuMs);
      const each = (ts: Trial[], f: (t: Trial) => number) => ts.map((t) => Math.round(f(t))).join(" / ");
      figures.push(
        {
          name: `${engine}: webhook ingest, worker draining, 50 connections, ${base.label} (median of ${ROUNDS} rounds of ${SECONDS} s)`,
          unit: "req/s",
          value: median(before.map((t) => t.rps)),
          notes: `rounds ${each(before, (t) => t.rps)}; p99 ${each(before, (t) => t.p99)} ms; web CPU per 1,000 webhooks ${each(before, (t) => t.webCpuMs)} ms`,
        },
        {
          name: `${engine}: webhook ingest, worker draining, 50 connections, this build (median of ${ROUNDS} rounds of ${SECONDS} s)`,
          unit: "req/s",
          value: median(now.map((t) => t.rps)),
          notes: `rounds ${each(now, (t) => t.rps)}; p99 ${each(now, (t) => t.p99)} ms; web CPU per 1,000 webhooks ${each(now, (t) => t.webCpuMs)} ms`,
        },
        { name: `${engine}: webhook ingest, this build vs ${base.label}, median of the rounds' ratios`, unit: "%", value: median(rps), notes: `rounds ${rps.map(r1).join(" / ")} %` },
        { name: `${engine}: web process CPU per 1,000 webhooks, this build vs ${base.label}, median of the rounds' ratios`, unit: "%", value: median(cpu), notes: `rounds ${cpu.map(r1).join(" / ")} %` },
      );
    }
    return figures;
  } finally {
    await sink.proc.stop();
  }
}

/** One fresh database and the build's processes, webhooks for SECONDS with the worker draining. */
async function trial(build: Build, engine: Engine, applets: { name: string; definition: unknown }[]): Promise<Trial> {
  const app = await startBuild(build, engine, applets);
  try {
    await settle();
    app.web.resetEld();
    const body = JSON.stringify({ title: "Order #1042 paid", amount: 59.9, n: 1 });
    const result = await autocannon({
      url: app.base,
      connections: 50,
      duration: SECONDS,
      requests: app.hooks.map((p) => ({ method: "POST" as const, path: p, headers: { "content-type": "application/json" }, body })),
    });
    if (result.non2xx > 0) throw new Error(`bench: ${result.non2xx} webhooks were not accepted by ${build.label}`);
    const web = await app.web.eld();
    return { rps: result.requests.average, p99: result.latency.p99, webCpuMs: web.cpuMs / (result.requests.total / 1000) };
  } finally {
    await app.stop();
  }
}
