import { actionRegistry } from "@/lib/actions";
import type { App } from "@/lib/app";
import type { ExecutorDeps } from "@/lib/executor/run";
import { queueAt } from "./db";
import { startExecutorLoop, type ExecutorLoop, type ExecutorLoopOptions } from "@/lib/queue/loop";

/**
 * The real executor loop in-process against the test database. `drain` waits until no run is
 * queued-and-due or running, polling the store's tally of the queue (the loop itself is unchanged).
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
      for (;;) {
        const { running, due } = await queueAt(app.store, app.clock.now());
        if (running === 0 && !due) return;
        if (Date.now() > deadline) throw new Error(`worker did not drain within ${timeoutMs} ms (${running} runs running, ${due ? "a queued run due" : "none due"})`);
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
