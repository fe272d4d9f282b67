import { Worker } from "node:worker_threads";
import { FeedFormatError, type ParsedFeed } from "./read";

/**
 * Feeds are read in a worker thread, one at a time, each within a time limit: a feed is a document
 * a stranger wrote, and the work it makes (nesting, millions of elements, a slow corner of an
 * encoding) must never stop the process that fetched it. The web process's "Fetch now" and the
 * worker's polls both come here, so /api/health, webhooks, runs and the SMTP receiver keep
 * answering whatever a feed holds. lib/feeds/read bounds the depth and the element count while it
 * reads; the time limit is the backstop for anything else, and ends the thread (a fresh one reads
 * the next feed).
 *
 * The thread starts with the first feed and ends after a minute without one, so a process that
 * reads no feeds never pays for it.
 */

export const FEED_READ_TIMEOUT_MS = 10_000;
const IDLE_MS = 60_000;
/** A 5 MB feed (the fetch cap) reads in well under 100 MB of heap; past this it is refused. */
const THREAD_HEAP_MB = 256;

// In a build, scripts/build-server.mjs points this at the bundled thread (dist/feed-thread.mjs).
const THREAD_URL = new URL("./thread-main.ts", import.meta.url);

export interface FeedJob {
  id: number;
  bytes: Uint8Array;
  contentType?: string;
  feedUrl?: string;
}
export type FeedJobResult = { id: number; feed: ParsedFeed } | { id: number; error: string; formatError: boolean };

interface Pending {
  job: FeedJob;
  timeoutMs: number;
  resolve: (feed: ParsedFeed) => void;
  reject: (err: Error) => void;
}

let thread: Worker | null = null;
let running: (Pending & { timer: ReturnType<typeof setTimeout> }) | null = null;
const queue: Pending[] = [];
let idleTimer: ReturnType<typeof setTimeout> | undefined;
let nextId = 1;

/** Feed bytes (decoded by lib/feeds/decode) → the feed, read off this thread. Rejects with a FeedFormatError for a document that is no readable feed. */
export function readFeedOffThread(bytes: Uint8Array, opts: { contentType?: string; feedUrl?: string; timeoutMs?: number } = {}): Promise<ParsedFeed> {
  return new Promise((resolve, reject) => {
    // A copy the thread owns: the fetched body may share its memory with other buffers.
    queue.push({ job: { id: nextId++, bytes: new Uint8Array(bytes), contentType: opts.contentType, feedUrl: opts.feedUrl }, timeoutMs: opts.timeoutMs ?? FEED_READ_TIMEOUT_MS, resolve, reject });
    next();
  });
}

function next(): void {
  if (running || queue.length === 0) return;
  clearTimeout(idleTimer);
  const pending = queue.shift()!;
  const worker = (thread ??= start());
  worker.ref();
  const timer = setTimeout(() => {
    // The thread is somewhere inside the document; ending it is the only way out.
    lose(new FeedFormatError(`reading it took longer than ${formatSeconds(pending.timeoutMs)}, so it was given up`));
  }, pending.timeoutMs);
  running = { ...pending, timer };
  worker.postMessage(pending.job, [pending.job.bytes.buffer as ArrayBuffer]);
}

const formatSeconds = (ms: number) => (ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`);

function start(): Worker {
  const options = { execArgv: [], resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } };
  const worker = THREAD_URL.pathname.endsWith(".ts") ? new Worker(loadWithTsx(THREAD_URL), { ...options, eval: true }) : new Worker(THREAD_URL, options);
  worker.on("message", (result: FeedJobResult) => {
    if (!running || result.id !== running.job.id) return;
    const done = running;
    finish();
    if ("feed" in result) done.resolve(result.feed);
    else if (result.formatError) done.reject(new FeedFormatError(result.error));
    else done.reject(new Error(result.error));
  });
  worker.on("error", (err: Error & { code?: string }) => {
    if (thread !== worker) return;
    lose(
      err.code === "ERR_WORKER_OUT_OF_MEMORY"
        ? new FeedFormatError(`reading it needed more than ${THREAD_HEAP_MB} MB of memory, so it was given up`)
        : new Error(`feeds: the feed-reading thread failed: ${err.message}`, { cause: err }),
    );
  });
  worker.on("exit", (code) => {
    if (thread !== worker) return;
    lose(new Error(`feeds: the feed-reading thread exited (code ${code})`));
  });
  return worker;
}

/**
 * The TypeScript source (dev, tests) in a thread: a thread does not inherit the parent's module
 * hooks, so it registers tsx's before it imports the file. The bundled file needs none of this.
 */
function loadWithTsx(url: URL): string {
  return `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}); });`;
}

/** The feed being read is done; the thread reads the next one, or waits a while for one. */
function finish(): void {
  if (running) clearTimeout(running.timer);
  running = null;
  if (queue.length > 0) return next();
  thread?.unref();
  clearTimeout(idleTimer);
  idleTimer = setTimeout(stop, IDLE_MS);
  idleTimer.unref();
}

/** The thread is lost (time limit, memory, a crash): the feed being read fails, the next one gets a fresh thread. */
function lose(err: Error): void {
  const failed = running;
  const worker = thread;
  thread = null;
  if (worker) void worker.terminate();
  finish();
  failed?.reject(err);
}

function stop(): void {
  const worker = thread;
  thread = null;
  if (worker) void worker.terminate();
}
