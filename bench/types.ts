/**
 * One benchmark file per area: `bench/<name>.bench.ts` with a default export returning figures.
 * `pnpm bench` (bench/run.ts) runs them all, or the ones named on the command line, and rewrites
 * the matching section of bench/RESULTS.md.
 */
export interface BenchFigure {
  /** What was measured, e.g. "webhook ingest, 50 connections". */
  name: string;
  /** e.g. "req/s", "p99 ms", "events/s". */
  unit: string;
  value: number;
  /** The target from the issue, e.g. ">= 4000". Compared as written: ">=" or "<=" then a number. */
  target?: string;
  notes?: string;
}

export type Bench = () => Promise<BenchFigure[]>;
