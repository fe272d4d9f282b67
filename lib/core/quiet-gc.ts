import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * Gives memory back when a process goes quiet. V8 keeps the young generation at the size a busy
 * stretch grew it to (both semi-spaces: 32 MB in the web process once Next has started and
 * rendered a page) until a full collection, and a quiet process never triggers one: it allocates
 * next to nothing. Measured (bench/RESULTS.md, "pnpm start as one process tree"): one full GC,
 * 13 ms, takes the web process from 146 to 120 MB and the worker from 87 to 79 MB. Under load
 * nothing changes: a collection waits for a quiet window, and V8 grows the young generation again
 * as it sees fit; the next quiet window after that gives it back again.
 */

/**
 * CPU time (user + system, all threads) below which a 5 s window counts as quiet: 2 % of a core.
 * An idle web process spends 40–50 ms a window on Next's and its own timers on a slow VM, so a
 * 50 ms bound left it "busy" for good there and it never gave its young generation back.
 */
const QUIET_CPU_MS = 100;
/** A young generation at most this large is left alone: V8's own size for a process at rest. */
const YOUNG_AT_REST_MB = 8;

export interface QuietGcOptions {
  /** Length of a window, ms (default 5 s). */
  windowMs?: number;
  /** Overridable for tests: the collector, the CPU clock and the young generation's size. */
  gc?: (() => void) | null;
  cpuMs?: () => number;
  youngMb?: () => number;
}

export interface QuietGc {
  /** The collections made so far. */
  collections(): number;
  stop(): void;
}

/** The process's own full-GC function, without exposing `gc` to the rest of the process. */
export function fullGc(): (() => void) | null {
  try {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as (options?: { type: "major"; execution: "sync" }) => void;
    return () => gc({ type: "major", execution: "sync" });
  } catch {
    return null;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
}

const processCpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const youngGenerationMb = (): number => (getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.space_size ?? 0) / 2 ** 20;

/**
 * Starts watching: after a quiet window, collects when the young generation is larger than at rest
 * and than it was after the last collection (so a young generation V8 keeps large is not collected
 * again and again).
 */
export function collectWhenQuiet(opts: QuietGcOptions = {}): QuietGc {
  const gc = opts.gc === undefined ? fullGc() : opts.gc;
  const cpuMs = opts.cpuMs ?? processCpuMs;
  const youngMb = opts.youngMb ?? youngGenerationMb;
  let count = 0;
  let youngAfterLast = 0;
  let last = cpuMs();
  const timer = setInterval(() => {
    const now = cpuMs();
    const quiet = now - last < QUIET_CPU_MS;
    last = now;
    const young = youngMb();
    if (!quiet || !gc || young <= YOUNG_AT_REST_MB || young <= youngAfterLast) return;
    gc();
    count++;
    youngAfterLast = youngMb();
    // The collection's own CPU time is not work.
    last = cpuMs();
  }, opts.windowMs ?? 5_000);
  timer.unref();
  return { collections: () => count, stop: () => clearInterval(timer) };
}
