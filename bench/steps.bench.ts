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
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import Database from "better-sqlite3";
import pg from "pg";
import { freePorts, median, requireBuild, root, start, until, waitHealthy, type Proc } from "./processes";
import type { BenchFigure } from "./types";

/** main before the step list and its condition library (whose production build lacked re2js). */
const BASE_REF = process.env.BENCH_BASE_REF ?? "6b25a3e";
const RUNS = Number(process.env.BENCH_STEP_RUNS ?? 3000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const APPLETS = 20;
const PG_URL = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;
const r1 = (v: number) => Math.round(v * 10) / 10;

interface Build {
  label: string;
  dir: string;
}
type Engine = "sqlite" | "postgres";
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
  const current: Build = { label: "this build", dir: root };
  const base: Build = { label: `before the step list (${BASE_REF})`, dir: prepareBase(BASE_REF) };
  const [sinkPort] = (await freePorts(1)) as [number];
  const sink = start("bench/servers/sink.ts", { ...process.env, PORT: String(sinkPort) }, { tsx: true });
  await new Promise<void>((resolve) => sink.child.once("message", () => resolve()));
  const sinkUrl = `http://127.0.0.1:${sinkPort}/in`;
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

function oneActionApplet(url: string) {
  return {
    version: 1,
    trigger: { type: "webhook", config: {} },
    actions: [{ type: "http", config: { url, method: "POST", body: { title: "{{trigger.body.title}}", n: "{{trigger.body.n}}" } } }],
  };
}

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
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-steps-"));
  const schema = `bench_steps_${randomBytes(4).toString("hex")}`;
  const admin = engine === "postgres" ? new pg.Client({ connectionString: PG_URL }) : null;
  if (admin) {
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
  }
  const databaseUrl = admin ? `${PG_URL}${PG_URL!.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}` : "";
  const keys = { SECRETS_KEY: randomBytes(32).toString("base64"), SESSION_SECRET: randomBytes(24).toString("hex") };
  const env: NodeJS.ProcessEnv = { ...process.env, ...keys, DATA_DIR: dataDir, DATABASE_URL: databaseUrl, ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "warn", NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1" };
  const procs: Proc[] = [];
  const pool = admin ? new pg.Pool({ connectionString: databaseUrl, max: 1 }) : null;
  let sqlite: Database.Database | null = null;
  try {
    const out = execFileSync(process.execPath, ["--import", "tsx", "bench/servers/seed-applets.ts"], { cwd: build.dir, env: { ...env, NODE_ENV: "development", BENCH_APPLETS: JSON.stringify(applets) } }).toString();
    const hooks = JSON.parse(out.trim().split("\n").pop()!) as string[];
    const [webPort, smtpPort] = (await freePorts(2)) as [number, number];
    const appEnv = { ...env, PORT: String(webPort), HOST: "127.0.0.1", SMTP_INBOUND_PORT: String(smtpPort), PUBLIC_URL: `http://127.0.0.1:${webPort}` };
    const worker = start("dist/worker.mjs", appEnv, { cwd: build.dir });
    const web = start("dist/server.mjs", { ...appEnv, INBOUND_EMAIL: "false" }, { cwd: build.dir });
    procs.push(worker, web);
    await waitHealthy(`http://127.0.0.1:${webPort}`, [web, worker]);
    for (const p of procs) p.resetEld();
    const count = async (where: string): Promise<number> => {
      const sql = `SELECT COUNT(*) AS n FROM runs WHERE ${where}`;
      if (pool) return Number((await pool.query<{ n: string }>(sql)).rows[0]!.n);
      sqlite ??= new Database(path.join(dataDir, "app.db"), { readonly: true, fileMustExist: true });
      return (sqlite.prepare(sql).get() as { n: number }).n;
    };
    const t0 = performance.now();
    const result = await autocannon({
      url: `http://127.0.0.1:${webPort}`,
      connections: 50,
      amount: runs,
      requests: hooks.map((p) => ({ method: "POST" as const, path: p, headers: { "content-type": "application/json" }, body: BODY })),
    });
    if (result.non2xx > 0) throw new Error(`bench: ${result.non2xx} webhooks were not accepted by ${build.label}`);
    await until(`${build.label}'s runs on ${engine}`, async () => (await count("status IN ('queued', 'running')")) === 0, 900_000);
    const seconds = (performance.now() - t0) / 1000;
    const [workerCpu, webCpu] = (await Promise.all(procs.map((p) => p.eld()))).map((e) => e.cpuMs) as [number, number];
    return { rps: runs / seconds, seconds, failed: await count("status <> 'succeeded'"), cpuMsPerRun: (workerCpu + webCpu) / runs, workerCpuMsPerRun: workerCpu / runs };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    (sqlite as Database.Database | null)?.close();
    await pool?.end();
    if (admin) {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The older build in a folder of its own (git archive, offline install, `pnpm build`), made once
 * and kept under the OS's temp folder. Its seed script is this checkout's (it only uses the applet
 * service, which both have).
 */
function prepareBase(ref: string): string {
  const sha = execFileSync("git", ["rev-parse", "--short=10", ref], { cwd: root }).toString().trim();
  const dir = path.join(os.tmpdir(), `whenthen-bench-base-${sha}`);
  const built = () => existsSync(path.join(dir, "dist/worker.mjs")) && existsSync(path.join(dir, "dist/server.mjs")) && existsSync(path.join(dir, ".next/BUILD_ID"));
  if (!built()) {
    console.log(`bench steps: building ${ref} (${sha}) in ${dir} once`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execFileSync("sh", ["-c", `git archive ${sha} | tar -x -C '${dir}'`], { cwd: root, stdio: "inherit" });
    const sh = (cmd: string) => execFileSync("sh", ["-c", cmd], { cwd: dir, stdio: "inherit", env: { ...process.env, npm_config_nodedir: process.env.npm_config_nodedir ?? "/usr" } });
    sh("pnpm install --frozen-lockfile --offline || pnpm install --frozen-lockfile");
    sh("pnpm build");
  }
  mkdirSync(path.join(dir, "bench/servers"), { recursive: true });
  copyFileSync(path.join(root, "bench/servers/seed-applets.ts"), path.join(dir, "bench/servers/seed-applets.ts"));
  return dir;
}
