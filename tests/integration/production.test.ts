import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { isAlive } from "../helpers/processes";

/**
 * the production start as the image and `pnpm start` run it: `node dist/server.mjs`
 * and `node dist/worker.mjs` from `pnpm build`, nothing else. Needs the build (.ci/run builds
 * first); without one the suite is skipped and says so.
 */
const ROOT = path.resolve(__dirname, "../..");
const dist = path.join(ROOT, "dist");
const built = existsSync(path.join(dist, "server.mjs")) && existsSync(path.join(dist, "worker.mjs")) && existsSync(path.join(ROOT, ".next/BUILD_ID"));
const skipReason = built ? null : "no production build: run `pnpm build` first (.ci/run does)";
const pnpm = spawnSync("sh", ["-c", "command -v pnpm"], { encoding: "utf8" }).stdout.trim();

const children: ChildProcess[] = [];
const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-production-"));
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

function run(file: string, env: NodeJS.ProcessEnv, command: string[] = [process.execPath, file]) {
  const child = spawn(command[0]!, command.slice(1), { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (out += c.toString()));
  const exit = new Promise<{ code: number | null; signal: string | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));
  return { child, exit, output: () => out };
}

/** The processes whose parent is `pid`, with their command lines. */
function childrenOf(pid: number): { pid: number; args: string[] }[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, "utf8");
        if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== pid) return [];
        return [{ pid: Number(d), args: readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean) }];
      } catch {
        return [];
      }
    });
}

async function untilHealthy(base: string, procs: { child: ChildProcess; output: () => string }[]): Promise<number> {
  const deadline = Date.now() + 90_000;
  let health = 0;
  while (Date.now() < deadline && procs.every((p) => p.child.exitCode === null)) {
    health = (await fetch(`${base}/api/health`).catch(() => null))?.status ?? 0;
    if (health === 200) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  return health;
}

async function appEnv(): Promise<NodeJS.ProcessEnv> {
  const [port, smtp] = [await freePort(), await freePort()];
  return { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: "production", DATA_DIR: mkdtempSync(path.join(dataDir, "run-")), PORT: String(port), HOST: "127.0.0.1", SMTP_INBOUND_PORT: String(smtp), NEXT_TELEMETRY_DISABLED: "1", NO_COLOR: "1" };
}

describe.skipIf(skipReason !== null)(`production start${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  test("the SQLite default loads neither the PostgreSQL driver nor the transliteration tables at start: no static import of pg or transliteration in dist/", () => {
    for (const f of readdirSync(dist).filter((n) => n.endsWith(".mjs"))) {
      const text = readFileSync(path.join(dist, f), "utf8");
      expect(text, f).not.toMatch(/from\s+["'](pg|transliteration)["']/);
    }
  });

  test("the compiled bundles load no TypeScript tooling: no tsx, typescript or esbuild import anywhere in dist/", () => {
    for (const f of readdirSync(dist).filter((n) => n.endsWith(".mjs"))) {
      const text = readFileSync(path.join(dist, f), "utf8");
      expect(text, f).not.toMatch(/from\s+["'](tsx|typescript|esbuild)(\/[^"']*)?["']|import\(["'](tsx|typescript|esbuild)["']\)/);
    }
  });

  test("node dist/server.mjs and node dist/worker.mjs serve /setup and health, and each stops on SIGTERM by itself (no wrapper to forward it)", { timeout: 120_000 }, async () => {
    const [port, smtp] = [await freePort(), await freePort()];
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: "production", DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", SMTP_INBOUND_PORT: String(smtp), NEXT_TELEMETRY_DISABLED: "1" } as NodeJS.ProcessEnv;
    const worker = run("dist/worker.mjs", env);
    const web = run("dist/server.mjs", env);
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 90_000;
    let health = 0;
    while (Date.now() < deadline && web.child.exitCode === null && worker.child.exitCode === null) {
      health = (await fetch(`${base}/api/health`).catch(() => null))?.status ?? 0;
      if (health === 200) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(health, `${web.output()}\n${worker.output()}`).toBe(200);
    const root = await fetch(`${base}/`, { redirect: "manual" });
    expect(root.headers.get("location")).toMatch(/\/setup$/);
    expect((await fetch(`${base}/setup`)).status).toBe(200);
    // The pid the test started is node itself: its command line is node and the bundle, nothing else.
    for (const p of [web, worker]) expect(readFileSync(`/proc/${p.child.pid}/cmdline`, "utf8").split("\0").filter(Boolean).slice(1)).toEqual([p === web ? "dist/server.mjs" : "dist/worker.mjs"]);

    web.child.kill("SIGTERM");
    worker.child.kill("SIGTERM");
    expect(await web.exit, web.output()).toEqual({ code: 0, signal: null });
    expect(await worker.exit, worker.output()).toEqual({ code: 0, signal: null });
    expect(worker.output()).toContain("worker stopped");
  });

  test.skipIf(!pnpm)("pnpm start is pnpm, the web process and the worker, nothing in between; every line says which; SIGTERM to pnpm stops both, exit 0", { timeout: 120_000 }, async () => {
    const env = await appEnv();
    const start = run("", env, ["pnpm", "start"]);
    const base = `http://127.0.0.1:${env.PORT}`;
    expect(await untilHealthy(base, [start]), start.output()).toBe(200);
    const [web, ...others] = childrenOf(start.child.pid!);
    expect(others).toEqual([]);
    // pnpm's script `exec`s node: pnpm's child is the web process itself, and the worker is its only child.
    expect(web!.args.slice(1)).toEqual(["dist/start.mjs"]);
    const [worker, ...more] = childrenOf(web!.pid);
    expect(more).toEqual([]);
    expect(worker!.args.slice(1)).toEqual([path.join(dist, "worker.mjs")]);
    const lines = start.output().split("\n").filter((l) => l && !l.startsWith("$ "));
    expect(lines.some((l) => /^\[web\] .*listening on/.test(l))).toBe(true);
    expect(lines.some((l) => /^\[worker\] .*worker started/.test(l))).toBe(true);

    start.child.kill("SIGTERM");
    expect(await start.exit, start.output()).toEqual({ code: 0, signal: null });
    expect(start.output()).toMatch(/\[worker\] .*worker stopped/);
    expect(isAlive(web!.pid) || isAlive(worker!.pid)).toBe(false);
  });

  test("node dist/start.mjs: the worker killed, the web process stops and the launcher exits 137; the launcher killed, the worker stops by itself", { timeout: 180_000 }, async () => {
    const env = await appEnv();
    const first = run("dist/start.mjs", env);
    expect(await untilHealthy(`http://127.0.0.1:${env.PORT}`, [first]), first.output()).toBe(200);
    const [worker] = childrenOf(first.child.pid!);
    process.kill(worker!.pid, "SIGKILL");
    expect(await first.exit, first.output()).toEqual({ code: 137, signal: null });
    expect(first.output()).toContain("[start] worker ended (signal SIGKILL); stopping web");

    const second = run("dist/start.mjs", { ...env, DATA_DIR: mkdtempSync(path.join(dataDir, "run-")) });
    expect(await untilHealthy(`http://127.0.0.1:${env.PORT}`, [second]), second.output()).toBe(200);
    const [orphan] = childrenOf(second.child.pid!);
    second.child.kill("SIGKILL");
    await second.exit;
    const deadline = Date.now() + 30_000;
    while (isAlive(orphan!.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(isAlive(orphan!.pid)).toBe(false);
  });
});
