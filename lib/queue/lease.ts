import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { App } from "../app";
import type { FaultTracker } from "../core/faults";
import { snapshot } from "../metrics";

/** What a heartbeat publishes besides the lease: read by /api/health, the banner and GET /metrics. */
export interface WorkerReport {
  /** The port this worker's SMTP receiver listens on; null when it runs none. */
  smtpPort: number | null;
  /** This process's counters (lib/metrics `snapshot`). */
  metrics: string | null;
}

/** The default report: this process's counters, no SMTP receiver. */
export const countersOnly = async (): Promise<WorkerReport> => ({ smtpPort: null, metrics: await snapshot() });

/**
 * A worker's lease: its row in `workers`, renewed by the heartbeat. Another worker recovers the
 * runs of a worker whose lease has expired, so a crash stalls an applet for about one lease
 * (WORKER_LEASE_SECONDS), not for the ten-minute stuck bound.
 */
export interface WorkerLease {
  readonly workerId: string;
  readonly leaseMs: number;
  /**
   * True when the lease is fresh: renewed less than a third of the lease ago, or renewed now. False
   * when the renewal failed (the fault is recorded): nothing may be claimed then, because another
   * worker may soon take the claim back.
   */
  keep(opts?: {
    force?: boolean;
    /** Make the report (SMTP port, counters) for this heartbeat, instead of sending the one made after the last. */
    fresh?: boolean;
  }): Promise<boolean>;
  /** A clean stop: the row goes, so no one waits for the lease to expire. */
  end(): Promise<void>;
}

/** host:pid:random. The random part makes every start a new worker: a process restarted with the
 * same pid (pid 1 in a container) does not pass for its dead predecessor. */
export const newWorkerId = (): string => `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;

export function createWorkerLease(
  app: Pick<App, "store" | "clock">,
  opts: {
    workerId: string;
    leaseMs: number;
    faults: FaultTracker;
    report?: () => Promise<WorkerReport>;
    /** What tells others directly that this worker is gone (lib/queue/liveness.ts), published with each heartbeat. */
    liveness?: () => { processScope: string | null; sessionLock: number | null };
  },
): WorkerLease {
  let renewedAt = Number.NEGATIVE_INFINITY;
  const host = hostname();
  // The report is made after each heartbeat for the next one, so the heartbeat itself never waits
  // for it (its write starts at once, as the lease's callers expect). A report that cannot be made
  // (a bug) must not cost the lease: the heartbeat goes without it.
  let report: WorkerReport = { smtpPort: null, metrics: null };
  const makeReport = () =>
    (opts.report ?? countersOnly)().then(
      (r) => void (report = r),
      () => void (report = { smtpPort: null, metrics: null }),
    );
  return {
    workerId: opts.workerId,
    leaseMs: opts.leaseMs,
    async keep({ force = false, fresh = false } = {}) {
      if (fresh) await makeReport();
      const now = app.clock.now();
      if (!force && now.getTime() - renewedAt < opts.leaseMs / 3) return true;
      try {
        const beat = app.store.workers.heartbeat({
          id: opts.workerId,
          hostname: host,
          pid: process.pid,
          now,
          leaseMs: opts.leaseMs,
          fault: opts.faults.current({ except: "heartbeat" }),
          smtpPort: report.smtpPort,
          metrics: report.metrics,
          ...opts.liveness?.(),
        });
        void makeReport();
        await beat;
      } catch (err) {
        opts.faults.failed("heartbeat", err);
        return false;
      }
      renewedAt = now.getTime();
      opts.faults.succeeded("heartbeat");
      return true;
    },
    async end() {
      try {
        await app.store.workers.remove(opts.workerId);
      } catch (err) {
        // The lease then simply expires.
        opts.faults.failed("heartbeat", err);
      }
    },
  };
}

/**
 * The heartbeat: renews the lease on a real-time timer, a third of the lease and at most 15 s apart
 * whatever the lease (/api/health calls a heartbeat older than 60 s a stopped worker), since a slot
 * busy with a long action does not claim and claims alone would not keep it fresh. One that works
 * while faults are on (space came back) wakes the slots backing off, so they try again now rather
 * than at the end of a back-off that may be 30 s long.
 */
export function startHeartbeat(lease: Pick<WorkerLease, "keep">, opts: { leaseMs: number; faults: Pick<FaultTracker, "current">; wake: () => void }): { stop(): void } {
  const timer = setInterval(
    () => {
      const faulty = opts.faults.current() !== null;
      void lease.keep({ force: true }).then((kept) => {
        if (kept && faulty) opts.wake();
      });
    },
    Math.max(250, Math.min(15_000, Math.floor(opts.leaseMs / 3))),
  );
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
