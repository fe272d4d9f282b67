/**
 * Real-time pauses that `wake` ends early: a slot's back-off or idle wait, cut short when there is
 * work (a finished run, a notification, runs recovered).
 */
export function createPauses(): { pause: (ms: number) => Promise<void>; wake: () => void } {
  const waiters = new Set<() => void>();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  return { pause, wake: () => [...waiters].forEach((w) => w()) };
}
