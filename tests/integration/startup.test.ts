import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { createAppletService } from "@/lib/applets/service";
import { createApp } from "@/lib/app";
import { createAuth } from "@/lib/auth";
import { loadEnvFile } from "@/lib/core/env-file";
import { silentLogger } from "@/lib/core/log";

/**
 * Items 2, 3 and 5, with the real processes: server.ts and worker/index.ts started as
 * `pnpm dev` starts them (node --import tsx), a real .env file, real ports held by another socket.
 */
const ROOT = path.resolve(__dirname, "../..");
// tsx by its file, so a process whose working directory is elsewhere (the .env test) still finds it.
const TSX = pathToFileURL(path.join(ROOT, "node_modules/tsx/dist/loader.mjs")).href;
const children: ChildProcess[] = [];
const dirs: string[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      const gone = new Promise((r) => c.once("exit", r));
      c.kill("SIGTERM");
      const t = setTimeout(() => c.kill("SIGKILL"), 8000);
      await gone;
      clearTimeout(t);
    }
  }
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), "whenthen-startup-"));
  dirs.push(d);
  return d;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

/** A port some other program is listening on, for as long as the test runs. */
async function takenPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "0.0.0.0", r));
  servers.push(s);
  return (s.address() as AddressInfo).port;
}

interface Started {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the output once `pattern` appears; rejects if the process exits first. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<string>;
  exited: Promise<number | null>;
}

/** A clean environment: nothing from the developer's shell decides these tests. */
function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, NEXT_TELEMETRY_DISABLED: "1", NODE_ENV: "development", NEXT_DIST_DIR: ".next/startup-test", LOG_LEVEL: "info", ...extra };
}

function startProcess(script: string, env: NodeJS.ProcessEnv, cwd = ROOT): Started {
  const child = spawn(process.execPath, ["--import", TSX, path.join(ROOT, script)], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const waitFor = (pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${script}: no ${pattern} within ${timeoutMs} ms\n${out}`)), timeoutMs);
      const check = () => {
        if (pattern.test(out)) {
          clearTimeout(timer);
          resolve(out);
        }
      };
      child.stdout.on("data", check);
      child.stderr.on("data", check);
      void exited.then((code) => {
        clearTimeout(timer);
        if (pattern.test(out)) resolve(out);
        else reject(new Error(`${script} exited (${code}) before ${pattern}\n${out}`));
      });
      check();
    });
  return { child, output: () => out, waitFor, exited };
}

describe("a .env file reaches both processes, and the environment wins over it", () => {
  test("the worker reads .env from its working directory; SMTP_INBOUND_PORT from the environment overrides the file's", async () => {
    const dir = tempDir();
    const port = await freePort();
    // Port 1 would fail (it needs root): if the file won over the environment, the worker would not start.
    writeFileSync(path.join(dir, ".env"), "# a laptop's settings\nINBOUND_DOMAIN=mail.example.test\nSMTP_INBOUND_PORT=1\nWORKER_CONCURRENCY=3\n");
    const worker = startProcess(
      "worker/index.ts",
      baseEnv({ DATA_DIR: path.join(dir, "data"), SMTP_INBOUND_PORT: String(port), MIGRATIONS_DIR: path.join(ROOT, "drizzle"), TSX_TSCONFIG_PATH: path.join(ROOT, "tsconfig.json") }),
      dir,
    );
    const out = await worker.waitFor(/worker started/);
    expect(out).toMatch(new RegExp(`\\[whenthen:smtp\\] listening \\{"port":${port},"host":"[^"]+","domain":"mail.example.test"\\}`));
    expect(out).toMatch(/"concurrency":3/);
  });

  test("the web process reads the file named by ENV_FILE; PORT from the environment overrides the file's", async () => {
    const dir = tempDir();
    const port = await freePort();
    const envFile = path.join(dir, "whenthen.env");
    writeFileSync(envFile, 'PUBLIC_URL="http://from-dotenv.example.test"\nPORT=1\n');
    const web = startProcess("server.ts", baseEnv({ DATA_DIR: path.join(dir, "data"), ENV_FILE: envFile, PORT: String(port), HOST: "127.0.0.1" }));
    const out = await web.waitFor(/listening on/);
    expect(out).toMatch(new RegExp(`listening on http://from-dotenv\\.example\\.test \\{"host":"127\\.0\\.0\\.1","port":${port},`));
    // And it really serves there: the ingress answers before Next has even prepared.
    const health = await fetch(`http://127.0.0.1:${port}/api/health`);
    expect([200, 503]).toContain(health.status);
  });

  test("precedence in one place: environment (even an empty value) over the file over the defaults; a named ENV_FILE must exist", () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, ".env"), "A=file\nB=file\nC=file\n");
    const env: Record<string, string | undefined> = { A: "env", B: "" };
    expect(loadEnvFile(env, dir)).toBe(path.join(dir, ".env"));
    expect(env).toEqual({ A: "env", B: "", C: "file" });
    expect(loadEnvFile({}, tempDir())).toBeNull();
    expect(() => loadEnvFile({ ENV_FILE: "missing.env" }, dir)).toThrow(/cannot read ENV_FILE .*missing\.env/);
  });
});

describe("a taken port fails with the variable to change, not a bare EADDRINUSE", () => {
  test("web: PORT taken → exits 1 naming PORT and suggesting another", async () => {
    const dir = tempDir();
    const port = await takenPort();
    const web = startProcess("server.ts", baseEnv({ DATA_DIR: path.join(dir, "data"), PORT: String(port), SMTP_INBOUND_PORT: String(await freePort()) }));
    expect(await web.exited).toBe(1);
    expect(web.output()).toContain(`port ${port} is already in use (0.0.0.0:${port}, set by PORT); stop what is listening there or choose another port, e.g. PORT=${port + 1}`);
    expect(web.output()).not.toMatch(/at Server\.setupListenHandle/);
  });

  test("worker: SMTP_INBOUND_PORT taken → exits 1 naming SMTP_INBOUND_PORT", async () => {
    const dir = tempDir();
    const port = await takenPort();
    const worker = startProcess("worker/index.ts", baseEnv({ DATA_DIR: path.join(dir, "data"), SMTP_INBOUND_PORT: String(port) }));
    expect(await worker.exited).toBe(1);
    expect(worker.output()).toContain(`port ${port} is already in use (0.0.0.0:${port}, set by SMTP_INBOUND_PORT)`);
    expect(worker.output()).toContain(`SMTP_INBOUND_PORT=${port + 1}`);
    expect(worker.output()).not.toMatch(/at Server\.setupListenHandle/);
  });

  test("INBOUND_EMAIL=false: the worker runs without an SMTP receiver, so the port is not even opened", async () => {
    const dir = tempDir();
    const port = await takenPort();
    const worker = startProcess("worker/index.ts", baseEnv({ DATA_DIR: path.join(dir, "data"), SMTP_INBOUND_PORT: String(port), INBOUND_EMAIL: "false" }));
    const out = await worker.waitFor(/worker started/);
    expect(out).toContain('"smtp_port":"off (INBOUND_EMAIL=false)"');
  });
});

describe("pnpm reset-password", () => {
  test("reset-password on the server sets a new password and signs out every session", async () => {
    const dir = tempDir();
    const env = { DATA_DIR: dir };
    const app = createApp({ env, log: silentLogger });
    const auth = createAuth(app);
    const api = createApi({ app, applets: createAppletService(app), auth });
    const post = (p: string, body: unknown) => api.handle(new Request(`http://localhost:3000${p}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    const created = await post("/api/setup", { email: "owner@example.com", password: "first password 1" });
    const cookie = (created.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect(await auth.sessionFromCookieHeader(cookie)).not.toBeNull();

    // As an operator runs it: the script, the new password on standard input.
    const script = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts/reset-password.ts")], { cwd: ROOT, env: baseEnv(env), stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    script.stdout.on("data", (c: Buffer) => (out += c.toString()));
    script.stderr.on("data", (c: Buffer) => (out += c.toString()));
    script.stdin.end("second password 2\n");
    expect(await new Promise((r) => script.once("exit", r))).toBe(0);
    expect(out).toContain("new password set for owner@example.com; every session is signed out");

    expect(await auth.sessionFromCookieHeader(cookie)).toBeNull();
    expect((await post("/api/login", { email: "owner@example.com", password: "first password 1" })).status).toBe(401);
    expect((await post("/api/login", { email: "owner@example.com", password: "second password 2" })).status).toBe(200);
    void app.close();
  });

  test("reset-password refuses a short password and an unknown email in words, and changes nothing", async () => {
    const dir = tempDir();
    const run = async (args: string[], input: string) => {
      const p = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts/reset-password.ts"), ...args], { cwd: ROOT, env: baseEnv({ DATA_DIR: dir }), stdio: ["pipe", "pipe", "pipe"] });
      let out = "";
      p.stdout.on("data", (c: Buffer) => (out += c.toString()));
      p.stderr.on("data", (c: Buffer) => (out += c.toString()));
      p.stdin.end(input);
      return { code: await new Promise((r) => p.once("exit", r)), out };
    };
    const none = await run([], "long enough password\n");
    expect(none).toMatchObject({ code: 1 });
    expect(none.out).toContain("there is no admin yet; open the app's /setup page");
    const short = await run([], "short\n");
    expect(short.out).toContain("the new password must be at least 10 characters (got 5)");
    const unknown = await run(["--email", "who@example.com"], "long enough password\n");
    expect(unknown.out).toContain('no user with the email "who@example.com"');
  });
});
