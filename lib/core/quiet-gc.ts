import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * Gives memory back when a process goes quiet. V8 keeps the young generation at the size a busy
 * stretch grew it to (both semi-spaces: 24–32 MB resident in the web process once Next has started
 * and rendered a page), and a quiet process never triggers a collection that shrinks it: it
 * allocates next to nothing, and V8's memory reducer may or may not come by (in the web process
 * it came 20-30 s after the first page, or not within a minute). Full collections in the quiet
 * windows that follow shrink it (the web's new space 24 -> 1 MB, its RSS 157 -> 133 MB). Under
 * load nothing changes: a collection waits for a quiet window, and V8 grows the young generation
 * again as it sees fit; the next quiet stretch gives it back.
 */

/**
 * The share of a core (user + system CPU, all threads) below which a window counts as quiet: 2 %.
 * An idle web process spends 40–50 ms per 5 s on Next's and its own timers on a slow VM.
 */
const QUIET_SHARE = 0.02;
/**
 * The default window: short, so that the first quiet one comes soon after start-up (or a busy
 * stretch) and the memory reducer has done its work well before anyone looks at `top`.
 */
const WINDOW_MS = 2_000;
/** A young generation at most this large is left alone: V8's own size for a process at rest. */
const YOUNG_AT_REST_MB = 8;

export interface QuietGcOptions {
  /** Length of a window, ms (default 2 s). */
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
    // Called without options: Node 20's V8 reads gc({ type: "major" }) as a minor collection (a
    // scavenge), which gives nothing back and never starts the memory reducer.
    const gc = runInNewContext("gc") as () => void;
    return () => gc();
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
 * At most this many collections in one quiet stretch. V8 shrinks the young generation at a full
 * collection only once its allocation rate, sampled at collections, reads low: the first collection
 * after a busy stretch still sees the busy samples, one a few seconds of quiet later shrinks it
 * (seen with gc() every 2 s in a process gone quiet: 32 MB after the first and second, 1 MB after
 * the third). A young generation V8 keeps large anyway is then left alone until the next stretch.
 */
const COLLECTIONS_PER_STRETCH = 4;

/**
 * Starts watching: in each quiet window, collects while the young generation is larger than at rest,
 * up to COLLECTIONS_PER_STRETCH times until a busy window starts a new stretch.
 */
export function collectWhenQuiet(opts: QuietGcOptions = {}): QuietGc {
  const gc = opts.gc === undefined ? fullGc() : opts.gc;
  const cpuMs = opts.cpuMs ?? processCpuMs;
  const youngMb = opts.youngMb ?? youngGenerationMb;
  const windowMs = opts.windowMs ?? WINDOW_MS;
  let count = 0;
  let thisStretch = 0;
  let last = cpuMs();
  const timer = setInterval(() => {
    const now = cpuMs();
    const quiet = now - last < windowMs * QUIET_SHARE;
    last = now;
    if (!quiet) thisStretch = 0;
    if (!quiet || !gc || thisStretch >= COLLECTIONS_PER_STRETCH || youngMb() <= YOUNG_AT_REST_MB) return;
    gc();
    count++;
    thisStretch++;
    // The collection's own CPU time is not work.
    last = cpuMs();
  }, windowMs);
  timer.unref();
  return { collections: () => count, stop: () => clearInterval(timer) };
}
