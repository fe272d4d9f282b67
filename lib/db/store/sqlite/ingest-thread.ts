import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { newId } from "../../../core/ids";
import type { Logger } from "../../../core/log";
import type { Ingested, IngestInput } from "../types";
import { JOURNAL_SIZE_LIMIT_BYTES } from "./client";
import { INSERT_EVENT_SQL, INSERT_RUN_SQL } from "./runs-ingest";

/**
 * The web process's webhook inserts (the group commit, `runs.ingestMany`), on a connection of their
 * own in a thread. On the event loop they were a third of the web process's CPU per webhook (CPU
 * profile of `pnpm bench webhook`), and a commit that waited for the worker's write lock
 * (busy_timeout) or ran the 10,000-page checkpoint backstop held every other request with it.
 * Here they wait in the thread; the event loop only hands rows over and gets ids back.
 *
 * While a batch is in the thread, the batches that arrive meanwhile are sent as one when it is done:
 * under load a commit carries more webhooks, and a larger group commit costs less per webhook
 * (bench/RESULTS.md: 152 µs of wall time per webhook at 30 a commit, 78 at 120).
 *
 * Same SQL as the synchronous repo (./runs.ts), same answers: null for a taken dedupe key, and when
 * a row fails (its applet deleted a moment ago) the batch is redone with a savepoint per row so it
 * fails alone. Events with timed actions or controls over runs are not sent here (their plan, lane,
 * rate-limit slot and debounce window are written by the store's own repos in the same transaction,
 * ./planned-runs.ts, ./run-controls.ts): the store keeps those on its connection.
 */
export interface IngestThread {
  /** False once the thread failed: the store then writes on its own connection. */
  readonly alive: boolean;
  ingestMany(items: IngestInput[]): Promise<(Ingested | Error)[]>;
  /** Waits for the batch in the thread (at most `graceMs`), then ends the thread; later calls are refused. */
  stop(graceMs?: number): Promise<void>;
}

export interface IngestThreadOptions {
  file: string;
  synchronous?: "NORMAL" | "FULL";
  /** Same as the web process's own connection (lib/db/store/sqlite/index.ts). */
  walAutocheckpoint: number;
  log: Logger;
}

/** Rows a single commit carries at most when batches pile up behind a slow one. */
const MAX_MERGED = 1024;

// [eventId, appletId, source, dedupeKey, payloadJson, receivedAt, runId, maxAttempts]
type Row = [string, string, string, string | null, string, string, string, number];
type Fail = { message: string; code?: string };
type Reply = { id: number; results: (0 | 1 | Fail)[] } | { id: number; error: Fail };

// Plain CommonJS evaluated in the thread, as ./checkpoint.ts: no file to ship beside the bundle.
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
db.pragma("synchronous = " + workerData.synchronous);
db.pragma("wal_autocheckpoint = " + workerData.walAutocheckpoint);
db.pragma("journal_size_limit = " + workerData.journalSizeLimit);
db.pragma("foreign_keys = ON");
const insertEvent = db.prepare(workerData.insertEvent);
const insertRun = db.prepare(workerData.insertRun);
const one = (r) => {
  if (insertEvent.run(r[0], r[1], r[2], r[3], r[4], r[5], r[5], r[5]).changes === 0) return 0;
  insertRun.run(r[6], r[1], r[0], r[7], r[5], r[5], r[5]);
  return 1;
};
const fail = (e) => ({ message: String((e && e.message) || e), code: e && typeof e.code === "string" ? e.code : undefined });
const oneTx = db.transaction(one);
const batchTx = db.transaction((rows) => rows.map(one));
const eachTx = db.transaction((rows) => rows.map((r) => { try { return oneTx(r); } catch (e) { return fail(e); } }));
parentPort.on("message", (m) => {
  if (m === "close") { db.close(); parentPort.close(); return; }
  let results;
  try {
    results = batchTx(m.rows);
  } catch {
    try {
      results = eachTx(m.rows);
    } catch (e) {
      parentPort.postMessage({ id: m.id, error: fail(e) });
      return;
    }
  }
  parentPort.postMessage({ id: m.id, results });
});
`;

const toError = (f: Fail): Error => Object.assign(new Error(f.message), f.code ? { code: f.code } : {});

export function startIngestThread(opts: IngestThreadOptions): IngestThread {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const thread = new Worker(THREAD_SOURCE, {
    eval: true,
    // Plain CommonJS: none of the parent's loaders (tsx, vitest).
    execArgv: [],
    workerData: {
      file: opts.file,
      driver,
      synchronous: opts.synchronous ?? "NORMAL",
      walAutocheckpoint: opts.walAutocheckpoint,
      journalSizeLimit: JOURNAL_SIZE_LIMIT_BYTES,
      insertEvent: INSERT_EVENT_SQL,
      insertRun: INSERT_RUN_SQL,
    },
  });
  // The requests waiting on a batch keep the process alive, not the thread.
  thread.unref();

  type Waiter = { rows: Row[]; ids: { eventId: string; runId: string }[]; resolve: (r: (Ingested | Error)[]) => void; reject: (e: Error) => void };
  let queue: Waiter[] = [];
  let inFlight: { id: number; waiters: Waiter[] } | null = null;
  let nextId = 1;
  let dead: Error | null = null;
  let idle: (() => void) | null = null;

  const send = () => {
    if (inFlight || queue.length === 0) return;
    const waiters: Waiter[] = [];
    let rows: Row[] = [];
    while (queue.length > 0 && (waiters.length === 0 || rows.length + queue[0]!.rows.length <= MAX_MERGED)) {
      const w = queue.shift()!;
      waiters.push(w);
      rows = rows.length === 0 ? w.rows : rows.concat(w.rows);
    }
    inFlight = { id: nextId++, waiters };
    thread.postMessage({ id: inFlight.id, rows });
  };

  const settle = (m: Reply) => {
    const batch = inFlight;
    if (!batch || batch.id !== m.id) return;
    inFlight = null;
    let at = 0;
    for (const w of batch.waiters) {
      if ("error" in m) w.reject(toError(m.error));
      else {
        w.resolve(
          w.ids.map((ids, i) => {
            const r = m.results[at + i];
            return r === 1 ? ids : r === 0 ? null : toError(r ?? { message: "ingest thread: no answer for this row" });
          }),
        );
        at += w.rows.length;
      }
    }
    if (dead) return;
    send();
    if (!inFlight && idle) idle();
  };

  const die = (err: Error) => {
    if (dead) return;
    dead = err;
    const lost = [...(inFlight?.waiters ?? []), ...queue];
    inFlight = null;
    queue = [];
    // A batch in the thread when it died may or may not have committed: its senders get an error
    // (500) and deliver again; a dedupe key makes that redelivery harmless.
    for (const w of lost) w.reject(err);
    idle?.();
  };

  thread.on("message", settle);
  thread.on("error", (err) => {
    opts.log.error("the webhook insert thread failed; webhooks are stored on the web process's own connection from now on", { error: err.message });
    die(err);
  });
  thread.on("exit", () => die(new Error("ingest thread: stopped")));

  return {
    get alive() {
      return dead === null;
    },
    ingestMany(items) {
      if (dead) return Promise.reject(dead);
      const ids = items.map((i) => ({ eventId: i.eventId ?? newId(), runId: newId() }));
      const rows = items.map((i, n): Row => [ids[n]!.eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, ids[n]!.runId, i.maxAttempts]);
      return new Promise((resolve, reject) => {
        queue.push({ rows, ids, resolve, reject });
        send();
      });
    },
    async stop(graceMs = 5000) {
      if (!dead && (inFlight || queue.length > 0)) {
        await new Promise<void>((resolve) => {
          idle = resolve;
          setTimeout(resolve, graceMs).unref();
        });
      }
      if (!dead) {
        dead = new Error("ingest thread: the store is closed");
        thread.postMessage("close");
        await new Promise<void>((resolve) => {
          thread.once("exit", () => resolve());
          setTimeout(() => void thread.terminate().then(() => resolve()), graceMs).unref();
        });
      }
    },
  };
}

/** Whether the ingest thread of a store can take this batch: none of its events plans timed actions. */
export const threadable = (items: IngestInput[]): boolean => items.every((i) => !i.plan && !i.controls);
