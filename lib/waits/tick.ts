import type { App } from "../app";

/**
 * The tick's part for waits: every wait whose time (or timeout) has come is resolved once and its
 * run queued, in batches of `limit`. It reads only due rows (an index on the due time of unresolved
 * waits), so its cost grows with the waits due, not with the runs waiting. Returns how many resumed.
 */
export async function resumeDueWaits(app: Pick<App, "store" | "clock">, limit = 200): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await app.store.waits.resumeDue(app.clock.now(), limit);
    total += n;
    if (n < limit) return total;
  }
}
