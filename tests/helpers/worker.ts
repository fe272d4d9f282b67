import { actionRegistry } from "@/lib/actions";
import type { App } from "@/lib/app";
import type { ExecutorDeps } from "@/lib/executor/run";
import { testSql } from "./engines";
import { startExecutorLoop, type ExecutorLoop, type ExecutorLoopOptions } from "@/lib/queue/loop";

/**
 * The real executor loop in-process against the test database. `drain` waits until no run is
 * queued-and-due or running, polling the database (the loop itself is unchanged).
 */
export function startWorker(
  app: App,
  opts: { concurrency?: number; workerId?: string; deps?: Partial<ExecutorDeps>; loop?: Partial<ExecutorLoopOptions> } = {},
) {
  const loop: ExecutorLoop = startExecutorLoop(
    { app, actions: actionRegistry, ...opts.deps },
    { workerId: opts.workerId ?? "test-worker", concurrency: opts.concurrency ?? 4, idleMs: 5, ...opts.loop },
  );
  return {
    loop,
    async drain(timeoutMs = 10_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      // Counted in SQL: the store's tally of the queue (runs.tally) is not this question, and a drain
      // built on it let PostgreSQL suites go on with a run still to do.
      const sql = testSql(app.store);
      for (;;) {
        const { n } = (await sql.get<{ n: number }>(
          "SELECT COUNT(*) AS n FROM runs WHERE status = 'running' OR (status = 'queued' AND next_attempt_at <= ?)",
          app.clock.now().toISOString(),
        ))!;
        if (n === 0) return;
        if (Date.now() > deadline) throw new Error(`worker did not drain within ${timeoutMs} ms (${n} runs busy)`);
        loop.wake();
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    /** A test that failed half-way may leave a run whose outcome cannot be stored: after 10 s it is let go. */
    stop: async (): Promise<void> => {
      await loop.stop({ graceMs: 10_000 });
    },
  };
}
