import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";

/**
 * Issue 14 / 12.9: the production start as the image and `pnpm start` run it: `node dist/server.mjs`
 * and `node dist/worker.mjs` from `pnpm build`, nothing else. Needs the build (.ci/run builds
 * first); without one the suite is skipped and says so.
 */
const ROOT = path.resolve(__dirname, "../..");
const dist = path.join(ROOT, "dist");
const built = existsSync(path.join(dist, "server.mjs")) && existsSync(path.join(dist, "worker.mjs")) && existsSync(path.join(ROOT, ".next/BUILD_ID"));
const skipReason = built ? null : "no production build: run `pnpm build` first (.ci/run does)";

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

function run(file: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [file], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (out += c.toString()));
  const exit = new Promise<{ code: number | null; signal: string | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));
  return { child, exit, output: () => out };
}

describe.skipIf(skipReason !== null)(`production start${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  test("#14: the SQLite default loads neither the PostgreSQL driver nor the transliteration tables at start: no static import of pg or transliteration in dist/", () => {
    for (const f of readdirSync(dist).filter((n) => n.endsWith(".mjs"))) {
      const text = readFileSync(path.join(dist, f), "utf8");
      expect(text, f).not.toMatch(/from\s+["'](pg|transliteration)["']/);
    }
  });

  test("#14: the compiled bundles load no TypeScript tooling: no tsx, typescript or esbuild import anywhere in dist/", () => {
    for (const f of readdirSync(dist).filter((n) => n.endsWith(".mjs"))) {
      const text = readFileSync(path.join(dist, f), "utf8");
      expect(text, f).not.toMatch(/from\s+["'](tsx|typescript|esbuild)(\/[^"']*)?["']|import\(["'](tsx|typescript|esbuild)["']\)/);
    }
  });

  test("#12.9: node dist/server.mjs and node dist/worker.mjs serve /setup and health, and each stops on SIGTERM by itself (no wrapper to forward it)", { timeout: 120_000 }, async () => {
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
});
