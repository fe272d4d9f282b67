import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { until } from "../helpers/wait";
import { isAlive } from "../helpers/processes";

/**
 * The launcher of `pnpm start` / `pnpm dev` (lib/launcher) with real processes: a root that
 * launches a child and stops as server.ts does (tests/helpers/launcher-web.ts). The real web and
 * worker under it are in production.test.ts (`node dist/start.mjs`, `pnpm start`).
 */
const ROOT = path.resolve(__dirname, "../..");
const started: ChildProcess[] = [];

afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

function startLauncher(env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ["--import", "tsx", "tests/helpers/launcher-web.ts"], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  let out = "";
  let err = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (err += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));
  const output = () => `${out}${err}`;
  const up = async () => {
    await until(() => /\[worker\] worker writes slowly\n/.test(out) && /\[web\] web writes a line in two parts\n/.test(out), "both processes to say they are up", 30_000, output);
    return Number(/web started worker (\d+)/.exec(out)![1]);
  };
  return { child, exited, up, stdout: () => out, stderr: () => err, output };
}

describe("launcher: one web process that starts the worker and stands for both", () => {
  test("every line is prefixed with the process that wrote it, stdout to stdout and stderr to stderr, a line written in parts once", { timeout: 60_000 }, async () => {
    const l = startLauncher();
    await l.up();
    expect(l.stdout()).toContain("[web] web writes a line in two parts\n");
    expect(l.stdout()).toContain("[worker] worker started\n");
    expect(l.stdout()).toContain("[worker] worker writes slowly\n");
    expect(l.stderr()).toContain("[web] web warns\n");
    expect(l.stderr()).toContain("[worker] worker warns\n");
    // Nothing unprefixed: every line names its process.
    for (const line of l.output().split("\n").filter(Boolean)) expect(line).toMatch(/^\[(web|worker|start)\] /);
  });

  test("SIGTERM to the launcher reaches both; both stop and the launcher exits 0 after the worker has", { timeout: 60_000 }, async () => {
    const l = startLauncher();
    const workerPid = await l.up();
    l.child.kill("SIGTERM");
    expect(await l.exited).toEqual({ code: 0, signal: null });
    expect(l.stdout()).toContain("[web] web got SIGTERM\n");
    expect(l.stdout()).toContain("[worker] worker got SIGTERM\n");
    expect(isAlive(workerPid)).toBe(false);
  });

  test("the worker dying stops the web process, and the launcher exits with the worker's code", { timeout: 60_000 }, async () => {
    const l = startLauncher({ CHILD_EXIT_CODE: "3", CHILD_EXIT_AFTER_MS: "1500" });
    await l.up();
    expect(await l.exited).toEqual({ code: 3, signal: null });
    expect(l.stderr()).toContain("[start] worker ended (exit code 3); stopping web\n");
    // The web process stopped through its own handler, as server.ts does.
    expect(l.stdout()).toContain("[web] web got SIGTERM\n");
  });

  test("the worker killed by a signal: the launcher exits 128 + its number", { timeout: 60_000 }, async () => {
    const l = startLauncher();
    const workerPid = await l.up();
    process.kill(workerPid, "SIGKILL");
    expect(await l.exited).toEqual({ code: 137, signal: null });
    expect(l.stderr()).toContain("[start] worker ended (signal SIGKILL); stopping web\n");
  });

  test("the web process failing by itself stops the worker, and the launcher exits with the web's code", { timeout: 60_000 }, async () => {
    const l = startLauncher({ WEB_FAIL_AFTER_MS: "1500" });
    const workerPid = await l.up();
    expect(await l.exited).toEqual({ code: 2, signal: null });
    expect(l.stdout()).toContain("[worker] worker got SIGTERM\n");
    expect(isAlive(workerPid)).toBe(false);
  });

  test("a stop that fails in the web process after a clean stop of the worker still exits non-zero", { timeout: 60_000 }, async () => {
    const l = startLauncher({ WEB_STOP_CODE: "4" });
    await l.up();
    l.child.kill("SIGINT");
    expect(await l.exited).toEqual({ code: 4, signal: null });
    expect(l.stdout()).toContain("[worker] worker got SIGINT\n");
  });
});
