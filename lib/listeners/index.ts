import type { App } from "../app";
import { errorMessage, isDatabaseError } from "../core/errors";
import { newId } from "../core/ids";
import type { Applet, StoreTx } from "../db/store";
import { maxAttemptsOf, storedDefinition, type Definition } from "../definition";
import { saveEventFiles } from "../files/events";
import { signedFileUrl } from "../files/signed-url";
import { processMetrics } from "../metrics";
import { ingest, ingestSkipped } from "../queue/ingest";
import { LISTEN_TRIGGERS, listenTrigger, type RegisteredListen } from "../triggers";
import { pollContext } from "../triggers/context";
import { emptyTriggerState, type ListenContext, type ListenEvent, type ListenStop, type TriggerState } from "../triggers/types";

/**
 * The worker's held connections (triggers fed by `listen`: an IMAP mailbox, an MQTT
 * subscription). Every few seconds `reconcile` compares the enabled applets of those types with
 * the connections this worker holds:
 *
 * - an applet nobody listens for is taken under its job lock `listen:<applet id>` (one statement
 *   on either engine, so of several workers exactly one wins) and its plug-in's `listen` started;
 * - a held one has its lock renewed; a lock another worker took over (this one stalled past the
 *   TTL) stops it at once ("lost"), so two workers never both hold the connection for long, and
 *   events are deduped on their key for the moment they might;
 * - a changed trigger restarts it under the same lock, a disabled or deleted applet ends it.
 *
 * A `listen` that throws (a refused login, a broker that is down, a dropped connection) is the
 * trigger's error: stored in trigger_state as a failed poll is (error_count + 1, last_error with
 * its secrets redacted, the same alert at the same threshold), then it is called again after a
 * back-off. `connected()` clears the error (a recovery notice when an alert was sent). What the
 * plug-in emits is stored with its new state in one transaction, so a restart resumes exactly
 * after what was stored.
 */

export const LISTEN_LOCK_TTL_MS = 30_000;
export const LISTEN_RECONCILE_MS = 5_000;
/** Waits between attempts after consecutive failures: 1 s, 5 s, 15 s, 1 min, then every 5 min. */
export const LISTEN_BACKOFF_MS = [1_000, 5_000, 15_000, 60_000, 300_000] as const;

type ListenApp = Pick<App, "store" | "clock" | "log" | "bus" | "http" | "config" | "secrets">;

export interface ListenersOptions {
  /** This worker, as job_locks records it. */
  holder: string;
  ttlMs?: number;
  /** A wait that ends early when `signal` aborts; tests pass one they control. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface Listeners {
  /** One pass: take, renew, restart and end connections to match the enabled applets. */
  reconcile(): Promise<void>;
  /** Applet ids whose connection this worker holds. */
  held(): string[];
  /** Ends every connection ("shutdown") and releases their locks. */
  stop(): Promise<void>;
}

interface Session {
  version: string;
  abort: AbortController;
  done: Promise<void>;
}

export const listenLockName = (appletId: string): string => `listen:${appletId}`;

const versionOf = (a: Applet): string => `${a.updatedAt}\0${JSON.stringify(storedDefinition(a.definition).trigger)}`;

/** A real timer that ends early on abort. */
function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    timer.unref();
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

export function createListeners(app: ListenApp, opts: ListenersOptions): Listeners {
  const log = app.log.child("listen");
  const ttlMs = opts.ttlMs ?? LISTEN_LOCK_TTL_MS;
  const sleep = opts.sleep ?? abortableSleep;
  const sessions = new Map<string, Session>();
  let stopping = false;
  let passing: Promise<void> | null = null;

  async function end(appletId: string, reason: ListenStop): Promise<void> {
    const s = sessions.get(appletId);
    if (!s) return;
    sessions.delete(appletId);
    s.abort.abort(reason);
    await s.done;
    // A lock another worker holds now is not ours to release; a restart keeps it.
    if (reason !== "lost" && reason !== "restart") await app.store.jobLocks.release(listenLockName(appletId), opts.holder, app.clock.now());
  }

  function start(applet: Applet): void {
    const abort = new AbortController();
    const done = hold(app, applet, abort.signal, sleep).catch((err: unknown) => {
      // Only the store can get here (a plug-in's failures are the trigger's error): the next pass tries again.
      log.error("listening stopped: the database refused a write", { applet_id: applet.id, error: errorMessage(err) });
      sessions.delete(applet.id);
      void app.store.jobLocks.release(listenLockName(applet.id), opts.holder, app.clock.now()).catch(() => undefined);
    });
    sessions.set(applet.id, { version: versionOf(applet), abort, done });
  }

  async function pass(): Promise<void> {
    const applets = (await Promise.all(LISTEN_TRIGGERS.map((type) => app.store.applets.listByTriggerType(type)))).flat();
    const wanted = new Map(applets.map((a) => [a.id, a]));
    for (const id of [...sessions.keys()]) {
      if (wanted.has(id)) continue;
      await end(id, (await app.store.applets.get(id)) ? "disabled" : "deleted");
    }
    for (const applet of applets) {
      if (stopping) return;
      const lock = listenLockName(applet.id);
      const held = sessions.get(applet.id);
      if (held) {
        if (!(await app.store.jobLocks.renew(lock, opts.holder, app.clock.now(), ttlMs))) {
          log.warn("another worker took over this applet's connection; closing ours", { applet_id: applet.id });
          await end(applet.id, "lost");
        } else if (held.version !== versionOf(applet)) {
          await end(applet.id, "restart");
          start(applet);
        }
        continue;
      }
      if (await app.store.jobLocks.take(lock, opts.holder, app.clock.now(), ttlMs)) {
        log.info("listening", { applet_id: applet.id, type: applet.triggerType });
        start(applet);
      }
    }
  }

  return {
    reconcile: () => {
      if (stopping) return Promise.resolve();
      // One pass at a time: a timer firing during a slow pass joins it.
      passing ??= pass().finally(() => (passing = null));
      return passing;
    },
    held: () => [...sessions.keys()],
    async stop() {
      stopping = true;
      await passing?.catch(() => undefined);
      await Promise.all([...sessions.keys()].map((id) => end(id, "shutdown").catch(() => undefined)));
    },
  };
}

/**
 * One applet's connection for as long as `signal` allows: the plug-in's `listen`, called again
 * after a back-off whenever it fails. Throws only on a database failure.
 */
async function hold(app: ListenApp, applet: Applet, signal: AbortSignal, sleep: (ms: number, signal: AbortSignal) => Promise<void>): Promise<void> {
  const def = storedDefinition(applet.definition);
  const plugin = listenTrigger(def.trigger.type);
  const parsed = plugin?.configSchema.safeParse(def.trigger.config);
  if (!plugin || !parsed?.success) {
    const why = parsed && !parsed.success ? parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ") : "not a listening trigger";
    await recordFailure(app, applet.id, `${def.trigger.type}: invalid config: ${why}`);
    return;
  }
  let failures = 0;
  while (!signal.aborted) {
    const state = (await app.store.triggerState.get(applet.id)) ?? emptyTriggerState();
    const ctx = listenContext(app, applet, def, plugin, signal, sleep, () => (failures = 0));
    try {
      await plugin.listen(parsed.data, state, ctx);
      if (!signal.aborted) throw new Error(`${plugin.type}: the connection ended`);
    } catch (err) {
      if (isDatabaseError(err)) throw err;
      if (signal.aborted) break;
      failures++;
      const message = ctx.redact(errorMessage(err));
      app.log.child("listen").warn("connection failed", { applet_id: applet.id, type: plugin.type, error: message, failures });
      processMetrics().pollErrors.inc({ trigger: plugin.type });
      await recordFailure(app, applet.id, message);
      await sleep(LISTEN_BACKOFF_MS[Math.min(failures, LISTEN_BACKOFF_MS.length) - 1]!, signal);
    }
  }
}

function listenContext(
  app: ListenApp,
  applet: Applet,
  def: Definition,
  plugin: RegisteredListen,
  signal: AbortSignal,
  sleep: (ms: number, signal: AbortSignal) => Promise<void>,
  onConnected: () => void,
): ListenContext {
  const base = pollContext(app, { signal });
  return {
    ...base,
    signal,
    appletId: applet.id,
    sleep: (ms) => sleep(ms, signal),
    async connected() {
      onConnected();
      await saveState(app, applet.id, (s) => (s.errorCount === 0 && s.lastError === null ? null : { ...s, lastError: null, errorCount: 0 }));
    },
    emit: (events, patch) => emit(app, applet, def, plugin, events, patch),
  };
}

/**
 * Writes the state `change` makes of the stored one, with the alert a crossed threshold or a
 * recovery means (the store's savePolled); `change` returning null writes nothing.
 */
async function saveState(app: ListenApp, appletId: string, change: (s: TriggerState) => TriggerState | null, tx?: StoreTx): Promise<void> {
  const write = async (t: StoreTx) => {
    const stored = await t.triggerState.get(appletId);
    const next = change(stored ?? emptyTriggerState());
    if (!next) return;
    const now = app.clock.now().toISOString();
    // savePolled updates a row: an applet that never had one gets it first.
    if (!stored) await t.triggerState.setNextRunAt(appletId, null, now);
    const { nextRunAt: _, ...rest } = next;
    await t.triggerState.savePolled(appletId, rest, now);
  };
  await (tx ? write(tx) : app.store.transaction(write));
}

function recordFailure(app: ListenApp, appletId: string, error: string): Promise<void> {
  const now = app.clock.now().toISOString();
  return saveState(app, appletId, (s) => ({ ...s, lastPolledAt: now, lastError: error, errorCount: s.errorCount + 1 }));
}

async function emit(
  app: ListenApp,
  applet: Applet,
  def: Definition,
  plugin: RegisteredListen,
  events: ListenEvent[],
  patch: Partial<TriggerState>,
): Promise<number> {
  const receivedAt = app.clock.now();
  const now = receivedAt.toISOString();
  return app.store.transaction(async (tx) => {
    let created = 0;
    for (const e of events) {
      const eventId = newId();
      const payload = e.files?.length ? withFileUrls(app, e.payload, eventId, receivedAt, e.files) : e.payload;
      const req = { appletId: applet.id, source: plugin.type, dedupeKey: e.dedupeKey, payload, maxAttempts: maxAttemptsOf(def), receivedAt: now, eventId, definition: def };
      const result = e.refused ? await ingestSkipped(app, req, e.refused, tx) : await ingest(app, req, tx);
      if (!result) continue;
      created++;
      if (e.files?.length) await saveEventFiles(tx, eventId, e.files, receivedAt);
    }
    await saveState(app, applet.id, (s) => ({ ...s, ...patch, lastPolledAt: now }), tx);
    return created;
  });
}

/** `payload.attachments` with the signed link of each stored file (lib/files/signed-url). */
function withFileUrls(app: ListenApp, payload: Record<string, unknown>, eventId: string, at: Date, files: ListenEvent["files"] & object): Record<string, unknown> {
  const stored = new Set(files.map((f) => f.filename));
  const list = Array.isArray(payload.attachments) ? (payload.attachments as Record<string, unknown>[]) : [];
  return {
    ...payload,
    attachments: list.map((a) => (typeof a.filename === "string" && stored.has(a.filename) ? { ...a, url: signedFileUrl(app.config, eventId, a.filename, at) } : a)),
  };
}
