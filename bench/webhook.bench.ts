/**
 * Webhook ingest as users run it. Every figure is from one run on one machine:
 *  1. baseline: plain node:http + one prepared SQLite insert per request;
 *  2. production: `node dist/server.mjs` (the ingress in front of Next, Next prepared and one page
 *     rendered) and `node dist/worker.mjs` as separate processes, the worker draining meanwhile:
 *     idle RSS per process, RSS under load, p50/p99, the event-loop delay p99 of both processes,
 *     the database growth per 1,000 runs;
 *     1 and 2 alternate for BENCH_ROUNDS rounds (default 3) of BENCH_SECONDS each, every round on a
 *     drained queue, so drift in the machine's speed falls on both; the ratio is the median of the
 *     rounds' ratios, p50/p99 the median of the rounds' (each round's figures are in the notes);
 *  3. end to end: N webhooks → http action to a local sink → succeeded, timed until the last settles;
 *  4. ingress only (bench/servers/ingest.ts: the same handler without Next), labelled as such;
 *  5. first, on a database of its own: `pnpm start` as users start it, the resident memory of its
 *     whole process tree (pnpm included) 3 s and TREE_IDLE_SECONDS (30) after the first page.
 * Load comes from autocannon at 50 connections on loopback. Needs `pnpm build` first.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { createApp } from "@/lib/app";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { alternatingRounds, freePorts, maxRssDuring, median, processTree, requireBuild, root, rssMb, start, startPnpmStart, until, waitHealthy, type Proc, type TreeProcess } from "./processes";
import type { BenchFigure } from "./types";

const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const APPLETS = 20;
const E2E_RUNS = Number(process.env.BENCH_E2E_RUNS ?? 10_000);
const r1 = (v: number) => Math.round(v * 10) / 10;
const TREE_IDLE_SECONDS = 30;

export default async function bench(): Promise<BenchFigure[]> {
  requireBuild();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-"));
  const procs: Proc[] = [];
  const [sinkPort, basePort, webPort, smtpPort, ingressPort] = (await freePorts(5)) as [number, number, number, number, number];
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "warn", NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1" };
  const ready = (p: Proc) => new Promise<void>((resolve) => p.child.once("message", () => resolve()));
  try {
    // First, before anything else runs: the ports are the app's own below, free again by then.
    const tree = await pnpmStartTree(env, webPort, smtpPort);
    const sink = start("bench/servers/sink.ts", { ...env, PORT: String(sinkPort) }, { tsx: true });
    procs.push(sink);
    await ready(sink);

    // The baseline stays up (idle while the app is measured) and is measured in every round.
    const base = start("bench/servers/baseline.ts", { ...env, PORT: String(basePort) }, { tsx: true });
    procs.push(base);
    await ready(base);

    // Applets whose action posts to the sink, made before the app starts (as a user's would be).
    const app = createApp({ env: { DATA_DIR: dataDir, ALLOW_PRIVATE_URLS: "true" }, log: silentLogger });
    const service = createAppletService(app);
    const hooks: string[] = [];
    for (let i = 0; i < APPLETS; i++) {
      const a = await service.create({
        name: `bench ${i}`,
        definition: {
          version: 1,
          trigger: { type: "webhook", config: {} },
          actions: [{ type: "http", config: { url: `http://127.0.0.1:${sinkPort}/in`, method: "POST", body: { title: "{{trigger.body.title}}", n: "{{trigger.body.n}}" } } }],
        },
      });
      hooks.push(`/api/hooks/${a.id}/${a.webhookToken}`);
    }

    const appEnv = { ...env, PORT: String(webPort), HOST: "127.0.0.1", SMTP_INBOUND_PORT: String(smtpPort), PUBLIC_URL: `http://127.0.0.1:${webPort}` };
    const worker = start("dist/worker.mjs", appEnv);
    const web = start("dist/server.mjs", appEnv);
    procs.push(worker, web);
    await waitHealthy(`http://127.0.0.1:${webPort}`, [web, worker]);
    await new Promise((r) => setTimeout(r, 3000));
    const idle = { web: rssMb(web.pid).now, worker: rssMb(worker.pid).now };

    const dbBytes = () => pragma(app, "page_count") * pragma(app, "page_size");
    const runsBefore = count(app, "runs");
    const ledgerBefore = count(app, "fire_ledger");
    const bytesBefore = dbBytes();
    const drained = () => until("the worker to drain the ingest backlog", () => count(app, "runs", "status IN ('queued','running')") === 0, 900_000);
    const rounds = await alternatingRounds(ROUNDS, base, {
      baseline: () => load(`http://127.0.0.1:${basePort}`, ["/"]),
      app: async () => {
        web.resetEld();
        worker.resetEld();
        const { result: ingest, maxMb } = await maxRssDuring([web.pid, worker.pid], load(`http://127.0.0.1:${webPort}`, hooks));
        return { ingest, webEld: await web.eld(), workerEld: await worker.eld(), maxMb };
      },
      drained,
    });
    type Round = (typeof rounds)[number];
    await base.stop();
    const ingested = count(app, "runs") - runsBefore;
    const growthPer1000 = ((dbBytes() - bytesBefore) / (ingested / 1000)) / 2 ** 20;
    const ledgerPer1000 = (count(app, "fire_ledger") - ledgerBefore) / (ingested / 1000);
    const sum = (f: (r: Round) => number) => rounds.reduce((s, r) => s + f(r), 0);
    const mean = (f: (r: Round) => number) => sum(f) / rounds.length;
    const each = (f: (r: Round) => number) => rounds.map((r) => Math.round(f(r))).join(" / ");
    const ratios = rounds.map((r) => (r.ingest.rps / r.baseline.rps) * 100);
    const totalRequests = sum((r) => r.ingest.requests);

    const e2eStart = performance.now();
    await load(`http://127.0.0.1:${webPort}`, hooks, E2E_RUNS);
    // Every webhook was stored when load() returned (202 is durable): done when nothing is queued
    // or running, polled through the partial indexes rather than by counting every finished run.
    await until("the end-to-end runs", () => count(app, "runs", "status IN ('queued', 'running')") === 0, 900_000);
    const e2eSeconds = (performance.now() - e2eStart) / 1000;
    const failed = count(app, "runs", "status NOT IN ('succeeded')");
    await web.stop();

    // The same handler without Next in the process, the worker draining again.
    const ingress = start("bench/servers/ingest.ts", { ...appEnv, PORT: String(ingressPort) }, { tsx: true });
    procs.push(ingress);
    await ready(ingress);
    ingress.resetEld();
    const ingressOnly = await load(`http://127.0.0.1:${ingressPort}`, hooks);
    const ingressEld = await ingress.eld();
    sink.child.send("count");
    const sunk = await new Promise<number>((r) => sink.child.once("message", (m) => r((m as { count: number }).count)));
    void app.close();

    const baselineRps = mean((r) => r.baseline.rps);
    return [
      {
        name: `baseline: node:http + one prepared SQLite insert, 50 connections (mean of ${ROUNDS} rounds of ${SECONDS} s)`,
        unit: "req/s",
        value: baselineRps,
        notes: `per round ${each((r) => r.baseline.rps)}; p50 ${median(rounds.map((r) => r.baseline.p50))} ms, p99 ${median(rounds.map((r) => r.baseline.p99))} ms (rounds ${each((r) => r.baseline.p99)}), event-loop delay p99 ${r1(median(rounds.map((r) => r.baseEld.p99)))} ms`,
      },
      {
        name: `production (node dist/server.mjs + dist/worker.mjs): webhook ingest, 50 connections, worker draining (mean of ${ROUNDS} rounds)`,
        unit: "req/s",
        value: mean((r) => r.ingest.rps),
        notes: `per round ${each((r) => r.ingest.rps)}; ${totalRequests} requests, ${sum((r) => r.ingest.non2xx)} not 202, ${ingested} runs stored`,
      },
      { name: "production: webhook ingest vs baseline, median of the rounds' ratios", unit: "%", value: median(ratios), target: ">= 85", notes: `rounds ${ratios.map((v) => r1(v)).join(" / ")} %` },
      { name: "production: webhook ingest p50, median of the rounds'", unit: "ms", value: median(rounds.map((r) => r.ingest.p50)) },
      { name: "production: webhook ingest p99, median of the rounds'", unit: "ms", value: median(rounds.map((r) => r.ingest.p99)), target: "<= 25", notes: `rounds ${each((r) => r.ingest.p99)} ms` },
      {
        name: "production: event-loop delay p99 during the load, web process, median of the rounds'",
        unit: "ms",
        value: median(rounds.map((r) => r.webEld.p99)),
        notes: `rounds ${rounds.map((r) => r1(r.webEld.p99)).join(" / ")} ms, max ${r1(Math.max(...rounds.map((r) => r.webEld.max)))} ms; worker p99 ${r1(median(rounds.map((r) => r.workerEld.p99)))} ms, max ${r1(Math.max(...rounds.map((r) => r.workerEld.max)))} ms`,
      },
      {
        name: "production: web process CPU per 1,000 webhooks",
        unit: "ms",
        value: sum((r) => r.webEld.cpuMs) / (totalRequests / 1000),
        notes: `ingress only: ${r1(ingressEld.cpuMs / (ingressOnly.requests / 1000))} ms; baseline: ${r1(sum((r) => r.baseEld.cpuMs) / (sum((r) => r.baseline.requests) / 1000))} ms. CPU time per request barely moves with contention for the cores, unlike req/s`,
      },
      { name: "production: idle RSS, web + worker", unit: "MB", value: idle.web + idle.worker, target: "<= 300", notes: `web ${r1(idle.web)} MB (Next prepared, one page rendered), worker ${r1(idle.worker)} MB; 3 s after start, before any webhook` },
      { name: "production: idle RSS, worker", unit: "MB", value: idle.worker, target: "<= 100" },
      {
        name: `pnpm start: idle RSS of the whole process tree (pnpm included), ${TREE_IDLE_SECONDS} s after the first page`,
        unit: "MB",
        value: sumOf(tree.idle, "rssMb"),
        target: "<= 250",
        notes: `${describeTree(tree.idle)}; PSS ${r1(sumOf(tree.idle, "pssMb"))} MB. 3 s after the first page: ${r1(sumOf(tree.early, "rssMb"))} MB (${describeTree(tree.early)}), before the quiet GC (lib/core/quiet-gc.ts); pnpm start exited ${tree.exitCode} on SIGTERM`,
      },
      { name: "production: RSS under load (max of 250 ms samples)", unit: "MB", value: Math.max(...rounds.map((r) => r.maxMb[0]! + r.maxMb[1]!)), notes: `web ${r1(Math.max(...rounds.map((r) => r.maxMb[0]!)))} MB, worker ${r1(Math.max(...rounds.map((r) => r.maxMb[1]!)))} MB` },
      {
        name: "production: fire ledger rows written per 1,000 accepted webhooks",
        unit: "rows",
        value: ledgerPer1000,
        notes: "a fire that became a run is listed from its event and run, not written again; only counted outcomes (refused, disabled, paused) and schedule/poll decisions write ledger rows, one per applet, reason and minute",
      },
      { name: "production: database growth per 1,000 runs stored", unit: "MB", value: growthPer1000, notes: "event + run rows with their indexes, a 60-byte JSON body; page_count × page_size before and after the ingest load" },
      {
        name: `production: end to end, ${E2E_RUNS} webhooks → http action → succeeded`,
        unit: "runs/s",
        value: E2E_RUNS / e2eSeconds,
        target: ">= 1000",
        notes: `${e2eSeconds.toFixed(1)} s, ${APPLETS} applets, WORKER_CONCURRENCY ${process.env.WORKER_CONCURRENCY ?? 4}, ${failed} runs not succeeded, sink saw ${sunk} requests`,
      },
      {
        name: "ingress only (bench/servers/ingest.ts, no Next in the process, under tsx), worker draining",
        unit: "req/s",
        value: ingressOnly.rps,
        notes: `p50 ${ingressOnly.p50} ms, p99 ${ingressOnly.p99} ms, ${r1((ingressOnly.rps / baselineRps) * 100)} % of the baseline's mean, event-loop delay p99 ${r1(ingressEld.p99)} ms`,
      },
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * `pnpm start` on a database of its own, measured as a user would see it in `top`: every process of
 * the tree, 3 s after the first page and again once it has been idle a while.
 */
async function pnpmStartTree(env: NodeJS.ProcessEnv, port: number, smtpPort: number): Promise<{ early: TreeProcess[]; idle: TreeProcess[]; exitCode: number | null }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-tree-"));
  const base = `http://127.0.0.1:${port}`;
  const app = await startPnpmStart({ ...env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", SMTP_INBOUND_PORT: String(smtpPort), PUBLIC_URL: base }, base);
  try {
    await new Promise((r) => setTimeout(r, 3000));
    const early = processTree(app.pid);
    await new Promise((r) => setTimeout(r, (TREE_IDLE_SECONDS - 3) * 1000));
    const idle = processTree(app.pid);
    return { early, idle, exitCode: await app.stop() };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const sumOf = (tree: TreeProcess[], key: "rssMb" | "pssMb") => tree.reduce((s, p) => s + p[key], 0);
const describeTree = (tree: TreeProcess[]) => tree.map((p) => `${p.command.replace(/^\S*\/node /, "node ").replace(root + "/", "")} ${r1(p.rssMb)}`).join(", ");

function pragma(app: ReturnType<typeof createApp>, name: string): number {
  return sqliteOf(app.store).pragma(name, { simple: true }) as number;
}

function count(app: ReturnType<typeof createApp>, table: string, where = "1 = 1"): number {
  return (sqliteOf(app.store).prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`).get() as { n: number }).n;
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
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, requests: result.requests.total, non2xx: result.non2xx };
}
