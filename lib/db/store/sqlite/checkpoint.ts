import { statSync } from "node:fs";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { systemClock, type Clock } from "../../../core/clock";
import type { Logger } from "../../../core/log";

/**
 * WAL checkpoints on a size and a time bound, for the web process. Its own connection leaves
 * checkpoints to the worker (OpenOptions.walAutocheckpoint: a checkpoint inside a webhook's commit
 * stalls every request behind it), but with the worker down the WAL then grew by megabytes a
 * second up to that 10,000-page backstop and, without journal_size_limit, never shrank: it
 * refilled a freed disk.
 *
 * Here a thread with its own connection runs `PRAGMA wal_checkpoint(PASSIVE)` when the WAL file
 * has grown past `maxWalBytes`, and at least every `maxAgeMs`. PASSIVE never waits for readers or
 * writers, and the copying happens off the event loop, so webhooks keep being answered while it
 * runs. Once a checkpoint has copied every frame, the next writer starts the WAL over and cuts the
 * file down to journal_size_limit (lib/db/store/sqlite/client.ts).
 */
export interface WalCheckpointer {
  /** Checkpoints now; resolves with SQLite's answer, or null when one is already running or it failed. */
  checkpoint(): Promise<CheckpointResult | null>;
  stop(): Promise<void>;
}

export interface CheckpointResult {
  /** 1 when another connection held the checkpoint lock (the worker checkpointing): nothing was done. */
  busy: number;
  /** Frames in the WAL. */
  log: number;
  /** Frames copied back into the database (all of them: the WAL starts over on the next write). */
  checkpointed: number;
}

export interface WalCheckpointerOptions {
  /** The database file (its WAL is `<file>-wal`). */
  file: string;
  log: Logger;
  /** Checkpoint when the WAL file is larger than this. Default 8 MB. */
  maxWalBytes?: number;
  /** Checkpoint at least this often. Default 30 s. */
  maxAgeMs?: number;
  /** How often the WAL's size is looked at. Default 1 s. */
  checkEveryMs?: number;
  clock?: Clock;
}

export interface CheckpointState {
  walBytes: number;
  nowMs: number;
  /** When the last checkpoint started, and the WAL's size after the last complete one (null: none yet, or it was partial). */
  lastAtMs: number;
  walBytesAfterComplete: number | null;
}

/**
 * Whether to checkpoint now. The size bound does not fire again for a WAL that has not changed
 * since a complete checkpoint: its file only shrinks at the next write, and until then there is
 * nothing to copy.
 */
export function checkpointDue(s: CheckpointState, bounds: { maxWalBytes: number; maxAgeMs: number }): boolean {
  if (s.walBytes === 0) return false;
  if (s.nowMs - s.lastAtMs >= bounds.maxAgeMs) return true;
  return s.walBytes > bounds.maxWalBytes && s.walBytes !== s.walBytesAfterComplete;
}

// Plain CommonJS evaluated in the thread: no file to ship next to the compiled code, no loader.
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
// Never worth waiting for: another connection checkpointing means the work is being done.
db.pragma("busy_timeout = 0");
parentPort.on("message", () => {
  try {
    const [r] = db.pragma("wal_checkpoint(PASSIVE)");
    parentPort.postMessage({ ok: true, result: r });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err && err.message), code: err && err.code });
  }
});
`;

export function startWalCheckpointer(opts: WalCheckpointerOptions): WalCheckpointer {
  const bounds = { maxWalBytes: opts.maxWalBytes ?? 8 * 1024 * 1024, maxAgeMs: opts.maxAgeMs ?? 30_000 };
  const clock = opts.clock ?? systemClock;
  const walFile = `${opts.file}-wal`;
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const thread = new Worker(THREAD_SOURCE, { eval: true, workerData: { file: opts.file, driver } });
  thread.unref();
  let pending: ((r: CheckpointResult | null) => void) | null = null;
  let lastAtMs = clock.now().getTime();
  let walBytesAfterComplete: number | null = null;
  let failing = false;
  let dead = false;

  const walSize = (): number => {
    try {
      return statSync(walFile).size;
    } catch {
      return 0;
    }
  };
  thread.on("message", (m: { ok: true; result: CheckpointResult } | { ok: false; error: string; code?: string }) => {
    const done = pending;
    pending = null;
    if (m.ok) {
      if (failing) opts.log.info("WAL checkpoints work again");
      failing = false;
      walBytesAfterComplete = m.result.busy === 0 && m.result.checkpointed === m.result.log ? walSize() : null;
      opts.log.debug("WAL checkpoint", { ...m.result, wal_bytes: walSize() });
      done?.(m.result);
    } else {
      // A full disk: the database file cannot take the pages back. Logged once until it works again.
      if (!failing) opts.log.error("WAL checkpoint failed", { error: m.error, code: m.code });
      failing = true;
      done?.(null);
    }
  });
  thread.on("error", (err) => {
    dead = true;
    clearInterval(timer);
    opts.log.error("the WAL checkpoint thread failed; the WAL is checkpointed by the worker (and at 10,000 pages) only", { error: err.message });
    pending?.(null);
    pending = null;
  });

  const checkpoint = (): Promise<CheckpointResult | null> => {
    if (pending || dead) return Promise.resolve(null);
    lastAtMs = clock.now().getTime();
    return new Promise((resolve) => {
      pending = resolve;
      thread.postMessage("checkpoint");
    });
  };
  const timer = setInterval(() => {
    if (pending) return;
    if (checkpointDue({ walBytes: walSize(), nowMs: clock.now().getTime(), lastAtMs, walBytesAfterComplete }, bounds)) void checkpoint();
  }, opts.checkEveryMs ?? 1000);
  timer.unref();

  return {
    checkpoint,
    async stop() {
      clearInterval(timer);
      dead = true;
      pending?.(null);
      pending = null;
      await thread.terminate();
    },
  };
}
