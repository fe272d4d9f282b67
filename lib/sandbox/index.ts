/**
 * Filter-code sandbox: runs an applet's filter code in QuickJS (WebAssembly) inside worker
 * threads. Each run gets a fresh QuickJS runtime and context with a memory limit, a stack limit
 * and an interrupt deadline; the main thread keeps a hard backstop that terminates a worker that
 * does not answer in time and starts a fresh one.
 */
import { Worker } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import type { FilterResult, ResultMessage, RunMessage } from "./protocol";

export type { FilterResult } from "./protocol";

export interface FilterInput {
  code: string;
  trigger: unknown;
  applet: { id: string; name: string };
  /**
   * What else the filter sees as globals, as templates see it: `steps`, `ai`, `item`, `index`…
   * (JSON data). `vars` here is what earlier filters set: `vars` starts with it, and `set()` adds.
   */
  context?: Record<string, unknown>;
}

export interface Sandbox {
  /** Never rejects for anything the filter does; rejects only after close() or for a trigger
   * that cannot be expressed as JSON (a caller defect). */
  run(input: FilterInput): Promise<FilterResult>;
  /** Rejects queued runs, lets runs in flight finish (each is bounded by the backstop), then
   * stops every worker. */
  close(): Promise<void>;
}

export interface SandboxOptions {
  /** Filter deadline in ms (wall time, checked by QuickJS's interrupt handler). Default 1000. */
  timeoutMs?: number;
  /** QuickJS heap limit per run in MB. Default 32. */
  memoryMb?: number;
  /** Worker threads, i.e. filters that can run at once. Default 2. */
  threads?: number;
}

/** How long past the deadline the main thread waits before it kills the worker. The worker's own
 * interrupt normally answers well within this; the backstop covers code that never reaches an
 * interrupt check (a long native call) and a wedged worker. */
const BACKSTOP_GRACE_MS = 500;
/** The worker's thread stack. QuickJS-in-WASM recursion uses the native stack too; the worker
 * caps QuickJS's own stack at 256 KB, which stays far inside this. */
const WORKER_STACK_MB = 8;
/** The worker's JS heap holds only strings copied out of QuickJS (themselves bounded by the
 * QuickJS memory limit); QuickJS's heap is WASM memory, outside this limit. */
const WORKER_HEAP_MB = 128;

const WORKER_URL = new URL("./worker.mjs", import.meta.url);

interface Job {
  id: number;
  code: string;
  triggerJson: string;
  appletJson: string;
  contextJson: string;
  resolve: (result: FilterResult) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job?: Job;
  dispatchedAt: number;
  backstop?: ReturnType<typeof setTimeout>;
  /** Set once this slot has been replaced or closed, so late events from its worker are ignored. */
  retired: boolean;
}

function isResultMessage(message: unknown): message is ResultMessage {
  return typeof message === "object" && message !== null && (message as { type?: unknown }).type === "result";
}

function isReadyMessage(message: unknown): boolean {
  return typeof message === "object" && message !== null && (message as { type?: unknown }).type === "ready";
}

function failure(error: string, durationMs: number): FilterResult {
  return { vars: {}, logs: [], skipped: false, error, duration_ms: durationMs };
}

/** The options as the pool uses them: defaults filled in, checked. */
interface Settings {
  timeoutMs: number;
  memoryBytes: number;
  threads: number;
}

/** The pool's state, shared by the functions below (one pool per createSandbox). */
interface Pool {
  settings: Settings;
  queue: Job[];
  slots: Slot[];
  nextId: number;
  closed: boolean;
  /** Why the last worker died before it became ready; used to fail runs instead of looping. */
  startupError?: string;
}

function settingsOf(opts: SandboxOptions): Settings {
  const timeoutMs = opts.timeoutMs ?? 1000;
  const memoryMb = opts.memoryMb ?? 32;
  const threads = opts.threads ?? 2;
  if (!(timeoutMs > 0)) throw new RangeError(`sandbox: timeoutMs must be positive, got ${timeoutMs}`);
  if (!(memoryMb >= 1)) throw new RangeError(`sandbox: memoryMb must be at least 1, got ${memoryMb}`);
  if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`sandbox: threads must be a positive integer, got ${threads}`);
  return { timeoutMs, memoryBytes: Math.floor(memoryMb * 1024 * 1024), threads };
}

export function createSandbox(opts: SandboxOptions = {}): Sandbox {
  const pool: Pool = { settings: settingsOf(opts), queue: [], slots: [], nextId: 1, closed: false };
  return {
    run(input: FilterInput): Promise<FilterResult> {
      if (pool.closed) return Promise.reject(new Error("sandbox: run() after close()"));
      let triggerJson: string | undefined;
      let contextJson: string | undefined;
      try {
        // The trigger crosses into the sandbox as JSON: a deep copy by construction.
        triggerJson = JSON.stringify(input.trigger ?? null);
        contextJson = JSON.stringify(input.context ?? {});
      } catch (error) {
        return Promise.reject(new TypeError("sandbox: trigger is not JSON-serializable", { cause: error }));
      }
      const appletJson = JSON.stringify({ id: String(input.applet.id), name: String(input.applet.name) });
      return new Promise<FilterResult>((resolve, reject) => {
        pool.queue.push({ id: pool.nextId++, code: String(input.code), triggerJson: triggerJson ?? "null", appletJson, contextJson: contextJson ?? "{}", resolve, reject });
        ensureWorkers(pool);
        dispatch(pool);
      });
    },
    close: () => closePool(pool),
  };
}

function spawn(pool: Pool): Slot {
  const worker = new Worker(WORKER_URL, {
    // The worker is plain .mjs: it needs none of the parent's loaders (tsx, vitest), and
    // inheriting them only slows start-up.
    execArgv: [],
    resourceLimits: { stackSizeMb: WORKER_STACK_MB, maxOldGenerationSizeMb: WORKER_HEAP_MB },
  });
  const slot: Slot = { worker, ready: false, dispatchedAt: 0, retired: false };
  worker.on("message", (message: unknown) => {
    if (slot.retired) return;
    if (isReadyMessage(message)) {
      slot.ready = true;
      pool.startupError = undefined;
      idle(slot);
      dispatch(pool);
      return;
    }
    if (!isResultMessage(message) || slot.job?.id !== message.id) return;
    const job = slot.job;
    clearTimeout(slot.backstop);
    slot.job = undefined;
    job.resolve(message.result);
    if (message.fatal) {
      // The worker exits by itself; replace it now so queued runs do not wait for the exit event.
      replace(pool, slot);
    } else {
      idle(slot);
    }
    dispatch(pool);
  });
  worker.on("error", (error: Error) => {
    if (slot.retired) return;
    lost(pool, slot, error.message);
  });
  worker.on("exit", (code) => {
    if (slot.retired) return;
    lost(pool, slot, `worker exited with code ${code}`);
  });
  pool.slots.push(slot);
  return slot;
}

/** An idle worker must not keep the process alive; a busy one must. */
function idle(slot: Slot): void {
  slot.worker.unref();
}

function retire(pool: Pool, slot: Slot): void {
  slot.retired = true;
  clearTimeout(slot.backstop);
  const index = pool.slots.indexOf(slot);
  if (index >= 0) pool.slots.splice(index, 1);
  void slot.worker.terminate();
}

function replace(pool: Pool, slot: Slot): void {
  retire(pool, slot);
  if (!pool.closed) spawn(pool);
}

function lost(pool: Pool, slot: Slot, why: string): void {
  const job = slot.job;
  slot.job = undefined;
  const wasReady = slot.ready;
  retire(pool, slot);
  if (job) job.resolve(failure(`filter: sandbox worker failed: ${why}`, performance.now() - slot.dispatchedAt));
  if (pool.closed) return;
  if (!wasReady) {
    // A worker that cannot even start will not start on the next try either: answer the
    // queued runs instead of respawning in a loop. The next run() tries again.
    pool.startupError = why;
    if (pool.slots.length === 0) {
      for (const queued of pool.queue.splice(0)) queued.resolve(failure(`filter: sandbox could not start: ${why}`, 0));
    }
    return;
  }
  spawn(pool);
  dispatch(pool);
}

function dispatch(pool: Pool): void {
  const { timeoutMs, memoryBytes } = pool.settings;
  for (const slot of pool.slots) {
    if (pool.queue.length === 0) return;
    if (!slot.ready || slot.job || slot.retired) continue;
    const job = pool.queue.shift() as Job;
    slot.job = job;
    slot.dispatchedAt = performance.now();
    slot.worker.ref();
    slot.backstop = setTimeout(() => {
      if (slot.job !== job) return;
      slot.job = undefined;
      job.resolve(failure(`filter: timed out after ${timeoutMs} ms`, performance.now() - slot.dispatchedAt));
      replace(pool, slot);
      dispatch(pool);
    }, timeoutMs + BACKSTOP_GRACE_MS);
    slot.worker.postMessage({
      type: "run",
      id: job.id,
      code: job.code,
      triggerJson: job.triggerJson,
      appletJson: job.appletJson,
      contextJson: job.contextJson,
      timeoutMs,
      memoryBytes,
    } satisfies RunMessage);
  }
}

function ensureWorkers(pool: Pool): void {
  if (pool.startupError !== undefined && pool.slots.length > 0) return;
  while (pool.slots.length < pool.settings.threads) spawn(pool);
}

async function closePool(pool: Pool): Promise<void> {
  if (pool.closed) return;
  pool.closed = true;
  for (const job of pool.queue.splice(0)) job.reject(new Error("sandbox: closed before the run started"));
  const inFlight = pool.slots
    .filter((slot) => slot.job)
    .map(
      (slot) =>
        new Promise<void>((resolve) => {
          const job = slot.job as Job;
          const settle = job.resolve;
          job.resolve = (result) => {
            settle(result);
            resolve();
          };
        }),
    );
  await Promise.all(inFlight);
  await Promise.all(
    pool.slots.splice(0).map((slot) => {
      slot.retired = true;
      clearTimeout(slot.backstop);
      return slot.worker.terminate();
    }),
  );
}
