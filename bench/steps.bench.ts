/**
 * The step list's cost, end to end as users run it (`node dist/server.mjs` + `node dist/worker.mjs`,
 * N webhooks → runs → a local sink, timed from the first request until the last run settles):
 *  1. a one-action applet on this build beside the same applet on the build from before the step
 *     list (BENCH_BASE_REF, default the last main commit before it), in alternating rounds, each on
 *     a fresh database, on SQLite and on PostgreSQL (BENCH_POSTGRES_URL or TEST_POSTGRES_URL); the
 *     older build is checked out, installed offline and built once under the OS's temp folder;
 *     beside runs/s, the CPU time the web and worker processes spent per run (which contention
 *     for the two cores moves much less than wall-clock throughput);
 *  2. a ten-step applet (if/else, a for_each of 10 items each posting to the sink, paths with an
 *     otherwise, a stop) on this build: runs/s and executed steps/s.
 */
import autocannon from "autocannon";
import { olderBuild, oneActionApplet, PG_URL, settle, startBuild, startSink, thisBuild, type Build, type Engine } from "./builds";
import { median, requireBuild, until } from "./processes";
import type { BenchFigure } from "./types";

/** main before the step list and its condition library (whose production build lacked re2js). */
const BASE_REF = process.env.BENCH_BASE_REF ?? "6b25a3e";
const RUNS = Number(process.env.BENCH_STEP_RUNS ?? 3000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const APPLETS = 20;
const r1 = (v: number) => Math.round(v * 10) / 10;

interface Trial {
  rps: number;
  seconds: number;
  failed: number;
  /** CPU time (user + system) the web and the worker process spent per run: contention for the cores changes it much less than runs/s. */
  cpuMsPerRun: number;
  /** The same, of the worker alone. */
  workerCpuMsPerRun: number;
}

export default async function bench(): Promise<BenchFigure[]> {
  requireBuild();
  const current = thisBuild;
  const base = olderBuild(BASE_REF, "before the step list");
  const { url: sinkUrl, proc: sink } = await startSink();
  const figures: BenchFigure[] = [];
  try {
    const engines: Engine[] = PG_URL ? ["sqlite", "postgres"] : ["sqlite"];
    for (const engine of engines) {
      const oneAction = Array.from({ length: APPLETS }, (_, i) => ({ name: `one action ${i}`, definition: oneActionApplet(sinkUrl) }));
      const before: Trial[] = [];
      const now: Trial[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        before.push(await trial(base, engine, oneAction, RUNS));
        now.push(await trial(current, engine, oneAction, RUNS));
      }
      const ratios = now.map((t, i) => (t.rps / before[i]!.rps) * 100);
      const cpuRatios = now.map((t, i) => (t.cpuMsPerRun / before[i]!.cpuMsPerRun) * 100);
      const each = (ts: Trial[]) => ts.map((t) => Math.round(t.rps)).join(" / ");
      const cpuEach = (ts: Trial[]) => ts.map((t) => `${t.cpuMsPerRun.toFixed(2)} (worker ${t.workerCpuMsPerRun.toFixed(2)})`).join(" / ");
      figures.push(
        { name: `${engine}: one-action applet end to end, ${RUNS} webhooks, ${base.label}`, unit: "runs/s", value: median(before.map((t) => t.rps)), notes: `rounds ${each(before)}; ${sumFailed(before)} runs not succeeded` },
        { name: `${engine}: one-action applet end to end, ${RUNS} webhooks, this build`, unit: "runs/s", value: median(now.map((t) => t.rps)), notes: `rounds ${each(now)}; ${sumFailed(now)} runs not succeeded` },
        { name: `${engine}: one-action applet, this build vs before the step list, median of the rounds' ratios`, unit: "%", value: median(ratios), target: ">= 95", notes: `rounds ${ratios.map(r1).join(" / ")} %` },
        {
          name: `${engine}: one-action applet, CPU per run of the web and worker processes, this build vs before the step list, median of the rounds' ratios`,
          unit: "%",
          value: median(cpuRatios),
          notes: `rounds ${cpuRatios.map(r1).join(" / ")} %; ms per run before ${cpuEach(before)}, this build ${cpuEach(now)}`,
        },
      );
      const tenStep = Array.from({ length: APPLETS }, (_, i) => ({ name: `ten steps ${i}`, definition: tenStepApplet(sinkUrl) }));
      const runs = Math.max(100, Math.round(RUNS / 5));
      const ten = await trial(current, engine, tenStep, runs);
      figures.push({
        name: `${engine}: ten-step applet with a for_each of 10 (12 requests per run), ${runs} webhooks, this build`,
        unit: "runs/s",
        value: ten.rps,
        notes: `${ten.seconds.toFixed(1)} s; ${r1(ten.rps * 16)} executed steps/s (16 per run: if, its then action, for_each with 10 items, paths, its path's action, stop); ${ten.failed} runs not succeeded`,
      });
    }
    sink.child.send("count");
    const sunk = await new Promise<number>((r) => sink.child.once("message", (m) => r((m as { count: number }).count)));
    figures.push({ name: "requests the sink saw", unit: "requests", value: sunk });
    return figures;
  } finally {
    await sink.stop();
  }
}

const sumFailed = (ts: Trial[]) => ts.reduce((s, t) => s + t.failed, 0);

/** Ten steps written, sixteen executed per run (the for_each's action ten times). */
function tenStepApplet(url: string) {
  const post = (id: string, body: Record<string, string>) => ({ id, type: "http", config: { url, method: "POST", body } });
  return {
    version: 2,
    trigger: { type: "webhook", config: {} },
    steps: [
      { id: "big", type: "if", conditions: { all: [{ field: "trigger.body.amount", op: "gt", value: 10 }] }, then: [post("tell_big", { amount: "{{trigger.body.amount}}" })], else: [post("tell_small", { amount: "{{trigger.body.amount}}" })] },
      { id: "each", type: "for_each", items: "{{trigger.body.items}}", max_items: 10, steps: [post("each_item", { item: "{{item.sku}}", index: "{{index}}" })] },
      {
        id: "route",
        type: "paths",
        mode: "first",
        paths: [{ name: "paid", conditions: { all: [{ field: "trigger.body.status", op: "eq", value: "paid" }] }, steps: [post("tell_paid", { title: "{{trigger.body.title}}" })] }],
        otherwise: [post("tell_other", { title: "{{trigger.body.title}}" })],
      },
      { id: "done", type: "stop", status: "succeeded", reason: "order {{trigger.body.n}} handled" },
    ],
  };
}

const BODY = JSON.stringify({
  title: "Order #1042 paid",
  amount: 59.9,
  n: 1,
  status: "paid",
  items: Array.from({ length: 10 }, (_, i) => ({ sku: `SKU-${i}`, qty: i + 1 })),
});

/** One fresh database, the build's web and worker processes, `runs` webhooks until every run settled. */
async function trial(build: Build, engine: Engine, applets: { name: string; definition: unknown }[], runs: number): Promise<Trial> {
  const app = await startBuild(build, engine, applets);
  try {
    await settle();
    app.web.resetEld();
    app.worker.resetEld();
    const t0 = performance.now();
    const result = await autocannon({
      url: app.base,
      connections: 50,
      amount: runs,
      requests: app.hooks.map((p) => ({ method: "POST" as const, path: p, headers: { "content-type": "application/json" }, body: BODY })),
    });
    if (result.non2xx > 0) throw new Error(`bench: ${result.non2xx} webhooks were not accepted by ${build.label}`);
    await until(`${build.label}'s runs on ${engine}`, async () => (await app.countRuns("status IN ('queued', 'running')")) === 0, 900_000);
    const seconds = (performance.now() - t0) / 1000;
    const [workerCpu, webCpu] = (await Promise.all([app.worker, app.web].map((p) => p.eld()))).map((e) => e.cpuMs) as [number, number];
    return { rps: runs / seconds, seconds, failed: await app.countRuns("status <> 'succeeded'"), cpuMsPerRun: (workerCpu + webCpu) / runs, workerCpuMsPerRun: workerCpu / runs };
  } finally {
    await app.stop();
  }
}
