/**
 * Per-run overhead of the filter sandbox: a trivial filter, measured from run() to its answer
 * (worker round trip, fresh QuickJS runtime + context, prelude, eval, vars read-back).
 */
import { performance } from "node:perf_hooks";
import { createSandbox } from "../lib/sandbox";
import type { BenchFigure } from "./types";

const WARM_UP_RUNS = 300;
const MEASURED_RUNS = 2000;
const CODE = "if (trigger.title.includes('draft')) skip('draft')";

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

const round = (value: number): number => Math.round(value * 1000) / 1000;

export default async function filterBench(): Promise<BenchFigure[]> {
  const sandbox = createSandbox();
  const applet = { id: "bench", name: "bench" };
  try {
    const input = (i: number) => ({ code: CODE, trigger: { title: i % 2 === 0 ? `post ${i}` : `draft ${i}` }, applet });
    for (let i = 0; i < WARM_UP_RUNS; i++) await sandbox.run(input(i));

    // Sequential: the latency one run adds to a claimed run.
    const latencies: number[] = [];
    for (let i = 0; i < MEASURED_RUNS; i++) {
      const started = performance.now();
      const result = await sandbox.run(input(i));
      latencies.push(performance.now() - started);
      if (result.error !== undefined || result.skipped !== (i % 2 === 1)) {
        throw new Error(`filter bench: unexpected result ${JSON.stringify(result)}`);
      }
    }
    latencies.sort((a, b) => a - b);

    // Concurrent: what the default two threads sustain when the executor keeps them busy.
    const started = performance.now();
    await Promise.all(Array.from({ length: MEASURED_RUNS }, (_, i) => sandbox.run(input(i))));
    const perSecond = MEASURED_RUNS / ((performance.now() - started) / 1000);

    const notes = `${MEASURED_RUNS} sequential runs after ${WARM_UP_RUNS} warm-up, default options (2 threads, 1000 ms, 32 MB)`;
    return [
      { name: "filter run overhead (trivial filter), p50", unit: "ms", value: round(percentile(latencies, 50)), target: "<= 2", notes },
      { name: "filter run overhead (trivial filter), p99", unit: "ms", value: round(percentile(latencies, 99)), notes },
      { name: "filter runs, 2 threads, all submitted at once", unit: "runs/s", value: Math.round(perSecond), notes: `${MEASURED_RUNS} runs` },
    ];
  } finally {
    await sandbox.close();
  }
}
