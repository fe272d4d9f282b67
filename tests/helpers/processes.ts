import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");

export interface WorkerProcess {
  child: ChildProcess;
  /** Every line the process wrote (stdout and stderr), in order. */
  lines: string[];
  /** Resolves with the first line (already written or still to come) that matches; rejects if the process exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (null when killed by a signal) once the process is gone. */
  exited: Promise<number | null>;
  /** SIGKILL unless it has exited (for cleanups). */
  kill(): void;
}

/**
 * The real worker (`worker/index.ts`) as its own node process: one process, so a signal sent to
 * its pid reaches it (no pnpm or tsx wrapper in between). SMTP on an ephemeral port, no nice.
 */
export function spawnWorkerProcess(env: Record<string, string>): WorkerProcess {
  // Only what the worker needs: no DATABASE_URL, PORT or the like leaking in from the test run.
  const childEnv: NodeJS.ProcessEnv = {
    NODE_ENV: "test",
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    SMTP_INBOUND_PORT: "0",
    WORKER_NICE: "0",
    LOG_LEVEL: "info",
    ...env,
  };
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "worker/index.ts"], { cwd: ROOT, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  const listeners = new Set<(line: string) => void>();
  for (const stream of [child.stdout!, child.stderr!]) {
    let buffered = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        lines.push(line);
        for (const l of listeners) l(line);
      }
    });
  }
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  return {
    child,
    lines,
    exited,
    waitFor(pattern, timeoutMs = 30_000) {
      const found = lines.find((l) => pattern.test(l));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const done = (fn: () => void) => {
          clearTimeout(timer);
          listeners.delete(onLine);
          fn();
        };
        const onLine = (line: string) => {
          if (pattern.test(line)) done(() => resolve(line));
        };
        const timer = setTimeout(() => done(() => reject(new Error(`worker never logged ${pattern}; last lines:\n${lines.slice(-15).join("\n")}`))), timeoutMs);
        listeners.add(onLine);
        void exited.then((code) => done(() => reject(new Error(`worker exited (${code}) before logging ${pattern}; last lines:\n${lines.slice(-15).join("\n")}`))));
      });
    },
    kill() {
      if (exitCode === undefined) child.kill("SIGKILL");
    },
  };
}

export interface Sink {
  url: string;
  /** Parsed JSON bodies, in arrival order. */
  bodies: Record<string, unknown>[];
  /** Each request's Idempotency-Key header (null without one), in the same order as `bodies`. */
  keys: (string | null)[];
  close(): Promise<void>;
}

/** A local HTTP endpoint the runs' http action posts to; answers 200 after `delayMs`. */
export async function startSink(opts: { delayMs?: number } = {}): Promise<Sink> {
  const bodies: Record<string, unknown>[] = [];
  const keys: (string | null)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const key = req.headers["idempotency-key"];
      keys.push(typeof key === "string" ? key : null);
      try {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>);
      } catch {
        bodies.push({ unreadable: Buffer.concat(chunks).toString("utf8") });
      }
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"ok":true}');
      }, opts.delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    bodies,
    keys,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface SlowServer {
  url: string;
  /** Requests received (never answered). */
  requests: number;
  close(): Promise<void>;
}

/** An HTTP server that takes requests and never answers them: a feed that hangs. */
export async function startSlowServer(): Promise<SlowServer> {
  const state = { requests: 0 };
  const server = http.createServer(() => {
    state.requests++;
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/feed.xml`,
    get requests() {
      return state.requests;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A port free on 127.0.0.1 right now (for a server a test starts: Dovecot, Mosquitto). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Whether a process with this pid still exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface WebProcess {
  /** http://127.0.0.1:<port> */
  base: string;
  child: import("node:child_process").ChildProcess;
  /** SIGTERM, then SIGKILL after 5 s; resolves once it is gone. */
  stop(): Promise<void>;
}

/**
 * A web host as its own node process (tests/helpers/web-process.ts: the lean ingress with the
 * wait links and signed file links, the API, the live feed), on an ephemeral port. Resolves once it
 * listens (PostgreSQL: after it migrated and checked the keys).
 */
export async function forkWebProcess(env: Record<string, string>): Promise<WebProcess> {
  const { fork } = await import("node:child_process");
  const child = fork(path.join(ROOT, "tests/helpers/web-process.ts"), [], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NODE_ENV: "test", LOG_LEVEL: "error", ...env },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (m) => resolve((m as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`web process exited with ${code}`)));
  });
  return {
    base: `http://127.0.0.1:${port}`,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
      }),
  };
}
