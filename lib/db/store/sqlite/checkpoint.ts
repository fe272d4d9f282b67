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
 * Here a thread with its own connection runs `PRAGMA wal_checkpoint(PASSIVE)` when the WAL holds
 * more than `maxWalBytes` not yet copied back (its counters, read with a NOOP checkpoint), and at
 * least every `maxAgeMs`. PASSIVE never waits for readers or writers, and the copying happens off
 * the event loop, so webhooks keep being answered while it runs. Once a checkpoint has copied
 * every frame, the next writer starts the WAL over, and a file grown past journal_size_limit is
 * cut back to it (lib/db/store/sqlite/client.ts).
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
  /** Checkpoint when the WAL holds more than this not yet copied back. Default 8 MB. */
  maxWalBytes?: number;
  /** Checkpoint at least this often. Default 30 s. */
  maxAgeMs?: number;
  /** How often the WAL is looked at. Default 1 s. */
  checkEveryMs?: number;
  clock?: Clock;
}

export interface CheckpointState {
  /** Bytes of WAL frames not yet copied back into the database file. */
  pendingBytes: number;
  nowMs: number;
  /** When the last checkpoint started. */
  lastAtMs: number;
}

/**
 * Whether to checkpoint now: something to copy back, and past either bound. Measured on the WAL's
 * frames, not its file: the file keeps its size when the WAL starts over (journal_size_limit,
 * ./client.ts), so its size says nothing about what is left to copy.
 */
export function checkpointDue(s: CheckpointState, bounds: { maxWalBytes: number; maxAgeMs: number }): boolean {
  if (s.pendingBytes <= 0) return false;
  return s.nowMs - s.lastAtMs >= bounds.maxAgeMs || s.pendingBytes > bounds.maxWalBytes;
}

/** Passes in a row at most while a busy writer keeps adding frames behind the last one. */
const MAX_ROUNDS = 50;

// Plain CommonJS evaluated in the thread: no file to ship next to the compiled code, no loader.
// "look" reads the WAL's counters (a NOOP checkpoint copies nothing and takes no lock).
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
// Never worth waiting for: another connection checkpointing means the work is being done.
db.pragma("busy_timeout = 0");
const pageBytes = db.pragma("page_size", { simple: true }) + 24;
const checkpoint = (mode) => db.pragma("wal_checkpoint(" + mode + ")")[0];
parentPort.on("message", (what) => {
  try {
    if (what === "look") {
      const r = checkpoint("NOOP");
      parentPort.postMessage({ ok: true, look: true, pendingBytes: r.log > 0 ? (r.log - Math.max(0, r.checkpointed)) * pageBytes : 0 });
      return;
    }
    let r = checkpoint("PASSIVE");
    // Frames committed while it copied are left over, and the WAL only starts over once all are
    // back: go again at once while that makes progress.
    for (let i = 0; i < ${MAX_ROUNDS} && r.busy === 0 && r.checkpointed < r.log; i++) {
      const next = checkpoint("PASSIVE");
      const progressed = next.checkpointed !== r.checkpointed || next.log !== r.log;
      r = next;
      if (!progressed) break;
    }
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
  let looking = false;
  let lastAtMs = clock.now().getTime();
  let failing = false;
  let dead = false;

  const walSize = (): number => {
    try {
      return statSync(walFile).size;
    } catch {
      return 0;
    }
  };
  type Message = { ok: true; result: CheckpointResult } | { ok: true; look: true; pendingBytes: number } | { ok: false; error: string; code?: string };
  thread.on("message", (m: Message) => {
    if (looking) {
      looking = false;
      if (m.ok && "look" in m && checkpointDue({ pendingBytes: m.pendingBytes, nowMs: clock.now().getTime(), lastAtMs }, bounds)) void checkpoint();
      return;
    }
    const done = pending;
    pending = null;
    if (m.ok && "result" in m) {
      if (failing) opts.log.info("WAL checkpoints work again");
      failing = false;
      opts.log.debug("WAL checkpoint", { ...m.result, wal_bytes: walSize() });
      done?.(m.result);
    } else if (!m.ok) {
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
    if (pending || looking || dead) return Promise.resolve(null);
    lastAtMs = clock.now().getTime();
    return new Promise((resolve) => {
      pending = resolve;
      thread.postMessage("checkpoint");
    });
  };
  // One message in flight at a time: a look, or a checkpoint.
  const timer = setInterval(() => {
    if (pending || looking || dead) return;
    looking = true;
    thread.postMessage("look");
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
