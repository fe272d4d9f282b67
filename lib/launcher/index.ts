import { fork, type ChildProcess } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import { exitProcess, setExitHook } from "../core/exit";
import { exitCodeOf, howItEnded, linePrefixer, lineSplitter } from "./lines";

/**
 * `pnpm start` and `pnpm dev`: the web process is also the launcher of the worker, so the tree a
 * user starts is pnpm and the two app processes, nothing in between (bench/RESULTS.md, "pnpm start
 * as one process tree": a launcher of its own would be one more Node process, 40 MB of resident
 * memory, as `concurrently` was 52–57 MB). The launcher
 * - prefixes every line: its own process's with `[web]`, the worker's with `[worker]`;
 * - passes SIGINT and SIGTERM on to the worker (Ctrl-C reaches both anyway, through the terminal's
 *   process group; `kill <pid of pnpm>` reaches only its child, this process);
 * - stops this process when the worker ends on its own, and the worker when this process ends
 *   (through the root's `exitProcess`, which waits for it; after a crash, SIGTERM on the way out,
 *   and the worker also stops when its IPC channel to us closes);
 * - exits with the code that says what happened: 0 after a requested stop of both, else the code
 *   of the first process that failed (128 + the signal's number for a signal).
 * Docker and systemd run `node dist/server.mjs` and `node dist/worker.mjs` directly, one service
 * each; the launcher is not in those.
 */
export interface LaunchOptions {
  /** This process, as its log lines are prefixed: "web". */
  name: string;
  /** The process started beside this one. */
  child: { name: string; file: string; execArgv: string[] };
}

const COLORS = { own: 36, child: 35 } as const;

export function launch(opts: LaunchOptions): ChildProcess {
  const colored = process.stdout.isTTY === true && process.env.NO_COLOR === undefined;
  const tag = (name: string, color: number) => (colored ? `\x1b[${color}m[${name}]\x1b[39m ` : `[${name}] `);
  const stdout = prefixOwnWrites(process.stdout, tag(opts.name, COLORS.own));
  const stderr = prefixOwnWrites(process.stderr, tag(opts.name, COLORS.own));
  const note = (line: string) => stderr(`${colored ? "\x1b[2m[start]\x1b[22m" : "[start]"} ${line}\n`);

  const child = fork(opts.child.file, [], { execArgv: opts.child.execArgv, stdio: ["ignore", "pipe", "pipe", "ipc"] });
  const childTag = tag(opts.child.name, COLORS.child);
  forwardLines(child.stdout!, stdout, childTag);
  forwardLines(child.stderr!, stderr, childTag);

  let stopping = false;
  let childFirst = false;
  let childCode: number | null = null;
  const childClosed = new Promise<number>((resolve) =>
    // "close", not "exit": the child's last lines have been read by then.
    child.once("close", (code: number | null, signal: NodeJS.Signals | null) => {
      childCode = exitCodeOf(code, signal);
      resolve(childCode);
      if (stopping) return;
      stopping = true;
      childFirst = true;
      note(`${opts.child.name} ended (${howItEnded(code, signal)}); stopping ${opts.name}`);
      // The root's own SIGTERM handler stops it gracefully; a root still starting has none yet
      // (ours is the only listener) and nothing to finish.
      if (process.listenerCount("SIGTERM") > 1) process.kill(process.pid, "SIGTERM");
      else void exitProcess(childCode === 0 ? 1 : childCode);
    }),
  );
  child.once("error", (err) => note(`could not start ${opts.child.name}: ${err.message}`));

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (childCode !== null) return;
      stopping = true;
      child.kill(signal);
    });
  }
  setExitHook(async (code) => {
    if (childCode === null) {
      stopping = true;
      child.kill("SIGTERM");
    }
    const theirs = await childClosed;
    // The first to fail says what happened.
    return childFirst ? theirs || code : code || theirs;
  });
  // A crash of this process skips exitProcess: the worker is told on the way out.
  process.once("exit", () => {
    if (childCode === null) child.kill("SIGTERM");
  });
  return child;
}

/** Prefixes every line this process writes to `stream`; returns the unprefixed writer. */
function prefixOwnWrites(stream: NodeJS.WriteStream, prefix: string): (text: string) => boolean {
  const raw = stream.write.bind(stream) as (chunk: string, cb?: (err?: Error | null) => void) => boolean;
  const prefixed = linePrefixer(prefix);
  const decoder = new StringDecoder("utf8");
  stream.write = ((chunk: string | Uint8Array, encoding?: BufferEncoding | ((err?: Error | null) => void), cb?: (err?: Error | null) => void) => {
    const done = typeof encoding === "function" ? encoding : cb;
    const text = typeof chunk === "string" ? (typeof encoding === "string" && !/^utf-?8$/i.test(encoding) ? Buffer.from(chunk, encoding).toString("utf8") : chunk) : decoder.write(Buffer.from(chunk));
    return raw(prefixed(text), done);
  });
  return raw;
}

/** The child's output, a whole line at a time, prefixed, into this process's stream. */
function forwardLines(from: NodeJS.ReadableStream, write: (text: string) => boolean, prefix: string): void {
  const lines = lineSplitter();
  from.setEncoding("utf8");
  from.on("data", (chunk: string) => {
    for (const line of lines.push(chunk)) write(prefix + line);
  });
  from.on("end", () => {
    for (const line of lines.end()) write(prefix + line);
  });
}
