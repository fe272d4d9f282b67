/**
 * The processes a bench starts, started the way users start them: `node dist/server.mjs` and
 * `node dist/worker.mjs` from `pnpm build` (never tsx), each with bench/servers/eld.mjs preloaded
 * for event-loop delay and memory figures.
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const eld = path.join(root, "bench/servers/eld.mjs");
// BENCH_CPU_PROF=<dir>: every child process writes a V8 CPU profile there (open in Chrome DevTools).
const profileArgs = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`] : [];

export interface Proc {
  child: ChildProcess;
  pid: number;
  /** Event-loop delay since the last reset, and memory now. */
  eld(opts?: { gc?: boolean }): Promise<{ p50: number; p99: number; max: number; rss: number; heapUsed: number; cpuMs: number }>;
  resetEld(): void;
  stop(): Promise<void>;
}

/** Fails with the command to run when the production build is missing or older than the sources. */
export function requireBuild(): void {
  const server = path.join(root, "dist/server.mjs");
  const next = path.join(root, ".next/BUILD_ID");
  if (!existsSync(server) || !existsSync(path.join(root, "dist/worker.mjs")) || !existsSync(next)) {
    throw new Error("bench: no production build; run `pnpm build` first (the bench measures what `pnpm start` runs)");
  }
  const built = Math.min(statSync(server).mtimeMs, statSync(next).mtimeMs);
  for (const f of ["server.ts", "worker/index.ts", "start.ts", "lib/launcher/index.ts", "lib/http/ingress.ts", "lib/queue/ingest.ts"]) {
    if (statSync(path.join(root, f)).mtimeMs > built) throw new Error(`bench: ${f} changed after the last build; run \`pnpm build\` first`);
  }
}

/** Starts a script (compiled .mjs with plain node, a bench .ts server with tsx). */
/** `cwd`: another checkout whose build to run (its own dist/), default this one. */
export function start(script: string, env: NodeJS.ProcessEnv, opts: { tsx?: boolean; exposeGc?: boolean; cwd?: string } = {}): Proc {
  const execArgv = [...(opts.tsx ? ["--import", "tsx"] : []), "--import", eld, ...(opts.exposeGc ? ["--expose-gc"] : []), ...profileArgs];
  // BENCH_APP_NODE_OPTIONS: NODE_OPTIONS for the app's processes only (e.g. a heap limit to compare).
  const childEnv = process.env.BENCH_APP_NODE_OPTIONS && !opts.tsx ? { ...env, NODE_OPTIONS: process.env.BENCH_APP_NODE_OPTIONS } : env;
  const cwd = opts.cwd ?? root;
  const child = fork(path.join(cwd, script), [], { cwd, env: childEnv, execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const proc: Proc = {
    child,
    pid: child.pid!,
    eld: (o = {}) =>
      new Promise((resolve, reject) => {
        const onMessage = (m: unknown) => {
          if ((m as { type?: string })?.type !== "eld") return;
          child.off("message", onMessage);
          resolve(m as Awaited<ReturnType<Proc["eld"]>>);
        };
        child.on("message", onMessage);
        if (!child.send({ type: "eld", gc: o.gc ?? false })) reject(new Error(`bench: ${script} does not answer`));
      }),
    resetEld: () => void child.send({ type: "eld-reset" }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
  return proc;
}

/**
 * `n` distinct ports nothing listens on now (all held open until every one is chosen), so benches
 * of several checkouts can run on one machine at once.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => createServer());
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))));
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** Resident memory now (VmRSS) and its high-water mark (VmHWM) in MB, from the kernel. */
export function rssMb(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
  return { now: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
}

/** A process of a tree: its command line and resident memory (RSS, and PSS: shared pages split between their users). */
export interface TreeProcess {
  pid: number;
  command: string;
  rssMb: number;
  pssMb: number;
}

/**
 * `pid` and all its descendants, as the kernel sees them now. The RSS of the tree counts the pages
 * its processes share (the node binary's code, above all) once per process: it is the figure `ps`
 * and `top` add up to; PSS splits them, so its sum is what the tree costs the machine.
 */
export function processTree(pid: number): TreeProcess[] {
  const children = new Map<number, number[]>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: TreeProcess[] = [];
  const visit = (p: number) => {
    try {
      const pss = Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, "utf8"))?.[1] ?? NaN) / 1024;
      const command = readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
      out.push({ pid: p, command, rssMb: rssMb(p).now, pssMb: pss });
    } catch {
      return;
    }
    for (const c of children.get(p) ?? []) visit(c);
  };
  visit(pid);
  return out;
}

/**
 * `pnpm start` as a user starts it (pnpm itself, and everything under it), until the first page has
 * rendered; `stop` sends SIGTERM to pnpm, as a service manager or `kill` would, and waits.
 */
export async function startPnpmStart(env: NodeJS.ProcessEnv, base: string): Promise<{ pid: number; stop: () => Promise<number | null> }> {
  const child = spawn("pnpm", ["start"], { cwd: root, env, stdio: ["ignore", "ignore", "inherit"] });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  await until(
    "pnpm start to serve a page",
    async () => {
      if (child.exitCode !== null) throw new Error(`bench: pnpm start exited with ${child.exitCode}`);
      return (await fetch(`${base}/api/health`).catch(() => null))?.status === 200 && (await fetch(`${base}/login`).catch(() => null))?.status === 200;
    },
    120_000,
  );
  return {
    pid: child.pid!,
    stop: () => {
      child.kill("SIGTERM");
      return exited;
    },
  };
}

/** Polls `check` until it holds; for process start-up and queue drains only. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Samples the RSS of each pid every 250 ms while `during` runs; returns the maximum per pid. */
export async function maxRssDuring<T>(pids: number[], during: Promise<T>): Promise<{ result: T; maxMb: number[] }> {
  const max = pids.map(() => 0);
  const timer = setInterval(() => pids.forEach((p, i) => (max[i] = Math.max(max[i]!, rssMb(p).now))), 250);
  try {
    return { result: await during, maxMb: max };
  } finally {
    clearInterval(timer);
  }
}

/** The web process answers /api/health with 200 (so the worker's heartbeat is fresh) and has rendered a page. */
export async function waitHealthy(base: string, procs: Proc[]): Promise<void> {
  await until(
    "the web process and the worker",
    async () => {
      for (const p of procs) if (p.child.exitCode !== null) throw new Error(`bench: a process exited with ${p.child.exitCode}`);
      const res = await fetch(`${base}/api/health`).catch(() => null);
      return res?.status === 200;
    },
    120_000,
  );
  await until("the first page", async () => (await fetch(`${base}/login`, { redirect: "manual" }).catch(() => null))?.status !== undefined, 60_000);
}

/** The middle value (the upper of the two middles for an even count); NaN for none. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor(sorted.length / 2)]!;
}

export type Eld = Awaited<ReturnType<Proc["eld"]>>;

/**
 * The same-run baseline and the app in alternating rounds (baseline first), each round ending on a
 * drained queue, so a swing of a small VM's speed falls into one round's ratio instead of deciding
 * the figure. The baseline process stays up, idle, while the app is measured; its event-loop delay
 * and CPU are its own probe's over its load.
 */
export async function alternatingRounds<L, A extends object>(
  rounds: number,
  base: Proc,
  step: { baseline: () => Promise<L>; app: () => Promise<A>; drained: () => Promise<void> },
): Promise<({ baseline: L; baseEld: Eld } & A)[]> {
  const out: ({ baseline: L; baseEld: Eld } & A)[] = [];
  for (let i = 0; i < rounds; i++) {
    base.resetEld();
    const baseline = await step.baseline();
    const baseEld = await base.eld();
    const app = await step.app();
    // The next round (and whatever follows the rounds) starts on a drained queue.
    await step.drained();
    out.push({ baseline, baseEld, ...app });
  }
  return out;
}
