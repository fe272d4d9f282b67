import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import type { LivenessSession, WorkerRow } from "../db/store";

/**
 * Telling a dead worker from a live one without waiting for its lease (issue: a SIGKILLed worker's
 * runs waited 30-35 s). The lease stays the fallback for a worker that lives but hangs, or whose
 * death cannot be seen directly. Two direct signs, each cheap for the store:
 * - on the same machine (same host name, boot and pid namespace: `processScope`), its pid is gone
 *   (process.kill(pid, 0) answers ESRCH): certain, and no store access at all;
 * - on PostgreSQL, the session-level advisory lock its liveness session held is free (the server
 *   drops it when the session ends). A server restart ends every session at once and each comes
 *   back within a second or so, so a free lock counts only when it is still free `confirmMs` later,
 *   seen from a session of our own that held its lock all that time.
 * The workers watched are those the last stale check read (every 10 s); the probe runs every
 * second, and only while there is another worker to watch.
 */
export interface LivenessWatch {
  /** What this worker publishes in its heartbeat: where its pid means it, and its lock's key. */
  mine(): { processScope: string | null; sessionLock: number | null };
  /** Resolves when the liveness session holds its lock, or after `waitMs` (the lease alone then speaks for us). */
  ready(waitMs?: number): Promise<void>;
  /**
   * Whether this worker may claim: false while its liveness session, having held its lock, is
   * reconnecting (others could take it for dead meanwhile). A session that never came up was
   * never published: the lease speaks for the worker, and claiming goes on.
   */
  healthy(): boolean;
  /** The live workers as the store has them (lease not expired); `self` is left out. */
  watch(workers: WorkerRow[]): void;
  /** The watched workers seen gone now (each reported once). */
  probe(): Promise<string[]>;
  close(): Promise<void>;
}

let scope: string | null | undefined;
/**
 * The machine and pid namespace this process's pid is meaningful in: host name, boot id and pid
 * namespace on Linux (two containers with one host name, or a host rebooted, are other scopes);
 * the host name elsewhere. Null when Linux does not say (no /proc): then no one checks our pid.
 */
export function processScope(): string | null {
  if (scope !== undefined) return scope;
  if (process.platform !== "linux") return (scope = `${hostname()}|${process.platform}`);
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const pidNs = readlinkSync("/proc/self/ns/pid");
    return (scope = `${hostname()}|${boot}|${pidNs}`);
  } catch {
    return (scope = null);
  }
}

/** Whether a process with this pid exists here (signal 0 checks without sending; EPERM: it exists, not ours). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

export function createLivenessWatch(opts: {
  self: string;
  session?: LivenessSession;
  /** How long a free lock must stay free to count (PostgreSQL). Default 3 s. */
  confirmMs?: number;
  now?: () => number;
  alive?: (pid: number) => boolean;
  scope?: string | null;
}): LivenessWatch {
  const now = opts.now ?? Date.now;
  const alive = opts.alive ?? pidAlive;
  const confirmMs = opts.confirmMs ?? 3_000;
  const myScope = opts.scope === undefined ? processScope() : opts.scope;
  const session = opts.session;
  let watched: WorkerRow[] = [];
  /** Workers reported gone, with when: not reported again unless they heartbeat after it. */
  const reported = new Map<string, number>();
  /** Session keys seen free, by worker id, with when first seen. */
  const suspects = new Map<string, number>();
  let everHeld = false;
  return {
    mine: () => ({ processScope: myScope, sessionLock: session?.key() ?? null }),
    async ready(waitMs = 5_000) {
      const until = now() + waitMs;
      while (session && session.key() === null && now() < until) await new Promise((r) => setTimeout(r, 50));
    },
    healthy() {
      if (!session) return true;
      if (session.key() !== null) {
        everHeld = true;
        return true;
      }
      return !everHeld;
    },
    watch(workers) {
      watched = workers.filter((w) => w.id !== opts.self && ((myScope !== null && w.processScope === myScope) || w.sessionLock !== null));
      const ids = new Set(watched.map((w) => w.id));
      for (const [id, at] of reported) {
        const w = watched.find((x) => x.id === id);
        // Gone from the list, or alive after all (it heartbeat since): forgotten.
        if (!w || Date.parse(w.seenAt) > at) reported.delete(id);
      }
      for (const id of suspects.keys()) if (!ids.has(id)) suspects.delete(id);
    },
    async probe() {
      const gone: string[] = [];
      const candidates = watched.filter((w) => !reported.has(w.id));
      const locked: WorkerRow[] = [];
      for (const w of candidates) {
        if (myScope !== null && w.processScope === myScope) {
          if (!alive(w.pid)) gone.push(w.id);
        } else if (w.sessionLock !== null) {
          locked.push(w);
        }
      }
      if (session && locked.length > 0) {
        const free = await session.free(locked.map((w) => w.sessionLock!));
        const since = session.heldSince();
        if (free === null || since === null) {
          suspects.clear();
        } else {
          const freeKeys = new Set(free);
          const t = now();
          for (const w of locked) {
            if (!freeKeys.has(w.sessionLock!)) {
              suspects.delete(w.id);
              continue;
            }
            const first = suspects.get(w.id);
            // Seen free first now, or first seen before our own session last came back: start again.
            if (first === undefined || first < since) suspects.set(w.id, t);
            else if (t - first >= confirmMs) gone.push(w.id);
          }
        }
      }
      const t = now();
      for (const id of gone) {
        reported.set(id, t);
        suspects.delete(id);
      }
      return gone;
    },
    close: async () => {
      await session?.close();
    },
  };
}
