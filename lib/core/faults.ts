import type { Clock } from "./clock";
import { errorMessage } from "./errors";
import type { Logger } from "./log";

/**
 * What a long-running process (the worker) could not do, by area ("claiming runs", "heartbeat",
 * "scheduler tick"). A failing area is logged when it starts failing, then at most once per
 * `relogMs` with the count since, and once more when it works again: a full disk must not write
 * thousands of identical lines to the disk it is short of. Each area backs off on its own,
 * doubling from `minMs` to `maxMs`.
 */
export interface FaultTracker {
  /** Records a failure; returns how long to wait before trying `area` again. */
  failed(area: string, err: unknown): number;
  /** Records a success: the area's fault ends (logged if it had one). */
  succeeded(area: string): void;
  /** The oldest fault still on, as one line ("claiming runs: database or disk is full (SQLITE_FULL), since …"), or null. */
  current(opts?: { except?: string }): string | null;
}

export interface FaultTrackerOptions {
  clock: Clock;
  log: Logger;
  minMs?: number;
  maxMs?: number;
  relogMs?: number;
  /** What the first log line of a fault says happens next. Default "retrying with back-off". */
  meanwhile?: string;
}

interface Fault {
  message: string;
  since: Date;
  failures: number;
  loggedAt: number;
}

export function createFaultTracker(opts: FaultTrackerOptions): FaultTracker {
  const minMs = opts.minMs ?? 500;
  const maxMs = opts.maxMs ?? 30_000;
  const relogMs = opts.relogMs ?? 60_000;
  const faults = new Map<string, Fault>();
  const describe = (err: unknown) => {
    const code = (err as { code?: unknown } | null)?.code;
    const message = errorMessage(err);
    return typeof code === "string" && !message.includes(code) ? `${message} (${code})` : message;
  };
  return {
    failed(area, err) {
      const now = opts.clock.now();
      const message = describe(err);
      const f = faults.get(area);
      if (!f) {
        faults.set(area, { message, since: now, failures: 1, loggedAt: now.getTime() });
        opts.log.error(`${area} failed; ${opts.meanwhile ?? "retrying with back-off"}`, { error: message });
        return minMs;
      }
      f.failures++;
      f.message = message;
      opts.log.debug(`${area} failed again`, { error: message, failures: f.failures });
      if (now.getTime() - f.loggedAt >= relogMs) {
        opts.log.error(`${area} still failing`, { error: message, failures: f.failures, since: f.since.toISOString() });
        f.loggedAt = now.getTime();
      }
      return Math.min(maxMs, minMs * 2 ** Math.min(f.failures - 1, 30));
    },
    succeeded(area) {
      const f = faults.get(area);
      if (!f) return;
      faults.delete(area);
      opts.log.info(`${area} works again`, { failures: f.failures, since: f.since.toISOString() });
    },
    current({ except } = {}) {
      const on = [...faults].filter(([area]) => area !== except).sort((a, b) => a[1].since.getTime() - b[1].since.getTime());
      if (on.length === 0) return null;
      const [area, f] = on[0]!;
      const more = on.length > 1 ? ` (and ${on.length - 1} more: ${on.slice(1).map(([a]) => a).join(", ")})` : "";
      return `${area}: ${f.message}, since ${f.since.toISOString()}${more}`;
    },
  };
}
