import type { App } from "../app";

/**
 * How far back every look re-reads. A change is missed only if it is committed more than this
 * after the newest change already seen, or stamped this much earlier by a worker whose clock lags.
 */
export const FEED_OVERLAP_MS = 2_000;
const PAGE = 500;
/** A hard ceiling on remembered changes (a burst larger than this may be published twice, never lost). */
const MAX_REMEMBERED = 50_000;

export type RunUpdatesFeeder = (() => Promise<void>) & {
  /** How many (run, updated_at) pairs are remembered for de-duplication (tests, diagnostics). */
  remembered(): number;
  /**
   * Starts again from now, what is in the overlap window before now being history (remembered, not
   * published): for a live view that opens after the feed was idle (no one watching, so looks came
   * only every few seconds), which would otherwise get those seconds' changes all at once.
   */
  resume(): Promise<void>;
};

/**
 * Returns a function that publishes `run.updated` for every change of a run (a new updated_at)
 * since the previous call. Calls run one after the other; starts from "now" so old history is not
 * replayed.
 *
 * It runs in the web process beside the webhook ingress, so it must not hold the event loop: under
 * 4,000 webhooks/s one look read ~16,000 rows in one go and stalled every webhook for 140–300 ms
 * (a p99 measured once). A look therefore yields to the event loop after every page, and reads
 * nothing while no one listens (no SSE stream open): it only moves its window to "now", so a
 * stream opened later gets changes from then on.
 *
 * Reading only `updated_at > last seen` loses changes: one stamped in the same millisecond as the
 * last row read but committed after the read, or stamped slightly earlier by a worker whose clock
 * lags. So every look re-reads an overlap window before the newest change seen (never before
 * "now" minus the window, so a worker clock running ahead cannot push the window past changes yet
 * to come) and publishes each (run id, updated_at) once; pairs that fell out of the window are
 * forgotten, which bounds the memory to the changes of one window.
 */
export function publishRunUpdates(app: Pick<App, "store" | "bus" | "clock">, opts: { overlapMs?: number } = {}): RunUpdatesFeeder {
  const overlapMs = opts.overlapMs ?? FEED_OVERLAP_MS;
  let newest = app.clock.now().getTime();
  const seen = new Map<string, number>();

  const look = async (publish: boolean): Promise<void> => {
    if (publish && !app.bus.hasSubscribers()) {
      newest = Math.max(newest, app.clock.now().getTime());
      seen.clear();
      return;
    }
    const floor = () => Math.min(newest, app.clock.now().getTime()) - overlapMs;
    // The first look pages through the window asynchronously: a change stamped after it began is
    // news, not history, even when it lands on a later page of that look.
    const historyUntil = app.clock.now().getTime();
    let at = new Date(floor()).toISOString();
    let after = "";
    for (;;) {
      const rows = await app.store.runs.changedAfter(at, after, PAGE);
      for (const r of rows) {
        const key = `${r.id} ${r.updated_at}`;
        if (seen.has(key)) continue;
        const t = Date.parse(r.updated_at);
        if (!publish && t > historyUntil) continue;
        seen.set(key, t);
        if (t > newest) newest = t;
        if (publish) app.bus.publish({ type: "run.updated", run_id: r.id, applet_id: r.applet_id, status: r.status }, r.updated_at);
      }
      const last = rows[rows.length - 1];
      if (rows.length < PAGE || !last) break;
      at = last.updated_at;
      after = last.id;
      // Webhooks waiting on the socket get their turn before the next page. The first look, at
      // start-up, runs through at once: it must remember what is there before anything changes.
      if (publish) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const forgetBefore = floor();
    for (const [key, t] of seen) if (t < forgetBefore) seen.delete(key);
    // Map order is insertion order: the oldest go first.
    for (const key of seen.keys()) {
      if (seen.size <= MAX_REMEMBERED) break;
      seen.delete(key);
    }
  };

  // What is already in the window at start is history: remembered, not published.
  // A failed look rejects its own call only; the next call starts afresh.
  let last = look(false);
  last.catch(() => {});
  const feed = () => (last = last.catch(() => {}).then(() => look(true)));
  const resume = () =>
    (last = last
      .catch(() => {})
      .then(() => {
        newest = Math.max(newest, app.clock.now().getTime());
        seen.clear();
        return look(false);
      }));
  return Object.assign(feed, { remembered: () => seen.size, resume });
}
