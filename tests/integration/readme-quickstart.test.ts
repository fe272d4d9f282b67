import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";

/**
 * The README's quick start, followed literally on a clean copy of the repository (the
 * files git knows, as a clone has them): its commands in order, in a shell, with the ports set the
 * way the README says to set them, until the browser's first page, /setup, answers.
 */
const ROOT = path.resolve(__dirname, "../..");
const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");

/** The sh block right after an HTML comment that starts with `marker`. */
function blockAfter(marker: string): string[] {
  const at = readme.indexOf(`<!-- ${marker}`);
  if (at < 0) throw new Error(`README.md has no "<!-- ${marker}" block`);
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  return m![1]!.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
}

const pnpm = spawnSync("sh", ["-c", "command -v pnpm"], { encoding: "utf8" }).stdout.trim();
const git = existsSync(path.join(ROOT, ".git"));
const skipReason = !pnpm ? "pnpm is not on PATH (npm install -g pnpm@12.4.2)" : !git ? "not a git checkout: no list of the files a clone has" : null;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

let dev: ChildProcess | null = null;
let copy = "";
afterAll(async () => {
  // A test that failed before its Ctrl-C leaves the group running: end it.
  if (dev?.pid) {
    try {
      process.kill(-dev.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  if (copy) rmSync(copy, { recursive: true, force: true });
});

describe.skipIf(skipReason !== null)(`README quick start${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  test("the README quick start, on a clean copy: pnpm install, then pnpm dev with PORT and SMTP_INBOUND_PORT as the README sets them, reaches /setup; Ctrl-C stops both processes", { timeout: 600_000 }, async () => {
    const commands = blockAfter("quick start: the commands");
    expect(commands).toEqual(["pnpm install", "pnpm dev"]);
    const otherPorts = blockAfter("quick start: other ports");
    expect(otherPorts).toHaveLength(1);
    expect(otherPorts[0]).toMatch(/^PORT=\d+ SMTP_INBOUND_PORT=\d+ pnpm dev$/);

    // A clean copy: the tracked files (and new ones not ignored), nothing built, no node_modules, no data.
    copy = mkdtempSync(path.join(tmpdir(), "whenthen-quickstart-"));
    const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" })
      .split("\0")
      .filter((f) => f && existsSync(path.join(ROOT, f)));
    const tar = spawnSync("sh", ["-c", `tar -cf - --null -T - | tar -xf - -C '${copy}'`], { cwd: ROOT, input: files.join("\0") });
    expect(tar.status).toBe(0);
    expect(existsSync(path.join(copy, "node_modules"))).toBe(false);

    // The environment of a new user's shell, plus what the README's prerequisites export.
    // No NODE_ENV, as in a new shell (vitest sets it to "test"; Next types it as always present).
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, CI: process.env.CI, LANG: "C.UTF-8" } as unknown as NodeJS.ProcessEnv;
    if (existsSync("/usr/include/node")) env.npm_config_nodedir = "/usr";

    const install = spawnSync("sh", ["-c", commands[0]!], { cwd: copy, env, encoding: "utf8", timeout: 400_000 });
    expect(install.status, `${commands[0]} failed:\n${install.stdout}\n${install.stderr}`).toBe(0);

    const [port, smtpPort] = [await freePort(), await freePort()];
    const devCommand = otherPorts[0]!.replace(/^PORT=\d+/, `PORT=${port}`).replace(/SMTP_INBOUND_PORT=\d+/, `SMTP_INBOUND_PORT=${smtpPort}`);
    const child = spawn("sh", ["-c", devCommand], { cwd: copy, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    dev = child;
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));

    const base = `http://localhost:${port}`;
    let setup: Response | null = null;
    const deadline = Date.now() + 300_000;
    while (Date.now() < deadline && child.exitCode === null) {
      const root = await fetch(`${base}/`, { redirect: "manual" }).catch(() => null);
      if (root?.status === 302 && root.headers.get("location")?.endsWith("/setup")) {
        setup = await fetch(`${base}/setup`, { signal: AbortSignal.timeout(120_000) }).catch(() => null);
        if (setup?.status === 200) break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(setup?.status, `pnpm dev did not reach /setup:\n${out.slice(-4000)}`).toBe(200);
    expect(await setup!.text()).toMatch(/admin/i);
    // Both processes came up on the ports the command gave them, with prefixed logs.
    expect(out).toMatch(new RegExp(`\\[web\\].*listening on http://localhost:${port}`));
    expect(out).toMatch(new RegExp(`\\[worker\\].*"port":${smtpPort}`));
    // The data folder is the documented ./data of the copy.
    expect(existsSync(path.join(copy, "data", "app.db"))).toBe(true);

    // Ctrl-C: the terminal sends SIGINT to the whole foreground process group; both processes
    // finish and the group is empty (nothing left running on the ports).
    const group = child.pid!;
    process.kill(-group, "SIGINT");
    const groupAlive = () => {
      try {
        process.kill(-group, 0);
        return true;
      } catch {
        return false;
      }
    };
    const stopBy = Date.now() + 30_000;
    while (groupAlive() && Date.now() < stopBy) await new Promise((r) => setTimeout(r, 200));
    expect(groupAlive(), `still running after Ctrl-C:\n${out.slice(-2000)}`).toBe(false);
    expect(out).toMatch(/\[worker\].*worker stopped/);
  });
});
