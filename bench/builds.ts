/**
 * Two builds side by side: this checkout's and an older commit's (checked out, installed offline
 * and built once under the OS's temp folder), each started as users run it on a fresh database
 * (SQLite under its own DATA_DIR, or a PostgreSQL schema of its own), its applets made through its
 * own applet service. Benches that compare a change against the code before it use this, so the
 * "before" is measured in the same run on the same machine as the "after".
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { freePorts, root, start, waitHealthy, type Proc } from "./processes";

export interface Build {
  label: string;
  dir: string;
}
export type Engine = "sqlite" | "postgres";
export const PG_URL = process.env.BENCH_POSTGRES_URL || process.env.TEST_POSTGRES_URL;

export const thisBuild: Build = { label: "this build", dir: root };

/**
 * The build of `ref` in a folder of its own (git archive, offline install, `pnpm build`), made once
 * and kept. Its seed script is this checkout's (it only uses the applet service, which every build
 * has).
 */
export function olderBuild(ref: string, label: string): Build {
  const sha = execFileSync("git", ["rev-parse", "--short=10", ref], { cwd: root }).toString().trim();
  const dir = path.join(os.tmpdir(), `whenthen-bench-base-${sha}`);
  const built = () => existsSync(path.join(dir, "dist/worker.mjs")) && existsSync(path.join(dir, "dist/server.mjs")) && existsSync(path.join(dir, ".next/BUILD_ID"));
  if (!built()) {
    console.log(`bench: building ${ref} (${sha}) in ${dir} once`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execFileSync("sh", ["-c", `git archive ${sha} | tar -x -C '${dir}'`], { cwd: root, stdio: "inherit" });
    const sh = (cmd: string) => execFileSync("sh", ["-c", cmd], { cwd: dir, stdio: "inherit", env: { ...process.env, npm_config_nodedir: process.env.npm_config_nodedir ?? "/usr" } });
    sh("pnpm install --frozen-lockfile --offline || pnpm install --frozen-lockfile");
    sh("pnpm build");
  }
  mkdirSync(path.join(dir, "bench/servers"), { recursive: true });
  copyFileSync(path.join(root, "bench/servers/seed-applets.ts"), path.join(dir, "bench/servers/seed-applets.ts"));
  return { label: `${label} (${ref})`, dir };
}

export interface Running {
  base: string;
  /** The applets' webhook paths, in the order given. */
  hooks: string[];
  web: Proc;
  worker: Proc;
  /** Runs matching a WHERE clause, read beside the app (a count, not through the app). */
  countRuns(where: string): Promise<number>;
  stop(): Promise<void>;
}

/** The build's web and worker processes on a fresh database holding `applets`, answering /api/health. */
export async function startBuild(build: Build, engine: Engine, applets: { name: string; definition: unknown }[]): Promise<Running> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-build-"));
  const schema = `bench_build_${randomBytes(4).toString("hex")}`;
  const admin = engine === "postgres" ? new pg.Client({ connectionString: PG_URL }) : null;
  if (engine === "postgres" && !PG_URL) throw new Error("bench: PostgreSQL needs BENCH_POSTGRES_URL or TEST_POSTGRES_URL");
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
  const stop = async () => {
    await Promise.all(procs.map((p) => p.stop()));
    sqlite?.close();
    await pool?.end();
    if (admin) {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const out = execFileSync(process.execPath, ["--import", "tsx", "bench/servers/seed-applets.ts"], { cwd: build.dir, env: { ...env, NODE_ENV: "development", BENCH_APPLETS: JSON.stringify(applets) } }).toString();
    const hooks = JSON.parse(out.trim().split("\n").pop()!) as string[];
    const [webPort, smtpPort] = (await freePorts(2)) as [number, number];
    const base = `http://127.0.0.1:${webPort}`;
    const appEnv = { ...env, PORT: String(webPort), HOST: "127.0.0.1", SMTP_INBOUND_PORT: String(smtpPort), PUBLIC_URL: base };
    const worker = start("dist/worker.mjs", appEnv, { cwd: build.dir });
    const web = start("dist/server.mjs", { ...appEnv, INBOUND_EMAIL: "false" }, { cwd: build.dir });
    procs.push(worker, web);
    await waitHealthy(base, [web, worker]);
    const countRuns = async (where: string): Promise<number> => {
      const sql = `SELECT COUNT(*) AS n FROM runs WHERE ${where}`;
      if (pool) return Number((await pool.query<{ n: string }>(sql)).rows[0]!.n);
      sqlite ??= new Database(path.join(dataDir, "app.db"), { readonly: true, fileMustExist: true });
      return (sqlite.prepare(sql).get() as { n: number }).n;
    };
    return { base, hooks, web, worker, countRuns, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The local sink the applets' actions post to (bench/servers/sink.ts), answering once it listens. */
export async function startSink(): Promise<{ url: string; proc: Proc }> {
  const [port] = (await freePorts(1)) as [number];
  const proc = start("bench/servers/sink.ts", { ...process.env, PORT: String(port) }, { tsx: true });
  await new Promise<void>((resolve) => proc.child.once("message", () => resolve()));
  return { url: `http://127.0.0.1:${port}/in`, proc };
}

/** A webhook applet with one http action posting the webhook's title and number to `url`. */
export function oneActionApplet(url: string) {
  return {
    version: 1,
    trigger: { type: "webhook", config: {} },
    actions: [{ type: "http", config: { url, method: "POST", body: { title: "{{trigger.body.title}}", n: "{{trigger.body.n}}" } } }],
  };
}

/**
 * Next loads its route modules for a few seconds after /api/health first answers; a bench that
 * counts CPU time per request waits that out, or the first build measured pays for it.
 */
export const settle = () => new Promise((r) => setTimeout(r, 3000));
