/**
 * Waits (polling, real time) until `done` holds: for an effect in another process or thread. The
 * deadline only guards against a hang; `context` adds what helps read a timeout (a process's log).
 */
export async function until(done: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000, context?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${context ? `; ${context()}` : ""}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
