import { Cron } from "croner";
import type { App } from "../app";
import type { Logger } from "../core/log";
import { newId } from "../core/ids";
import { publishRunUpdates } from "./poll";

/**
 * The web process's live view of runs (the SSE bus of GET /api/stream). The worker is another
 * process: a look at runs changed since the last look feeds the bus, every 2 s on SQLite. Where the
 * store announces run changes (PostgreSQL NOTIFY, from every worker and web process on every host),
 * each announcement triggers a look within 50 ms, and the timed look is only the safety net for a
 * dropped LISTEN connection (every 10 s). The store announces run changes only while some process
 * has a stream open and says so (`watchRuns`), which this does from the first stream on. Shared by
 * server.ts and the tests' web process, so a test of two web processes exercises this wiring, not
 * a copy of it.
 */
export function startLiveUpdates(app: Pick<App, "store" | "bus" | "clock">, log: Logger): { stop(): void } {
  const updates = publishRunUpdates(app);
  const warn = (what: string) => (err: unknown) => log.warn(what, { error: err instanceof Error ? err.message : String(err) });
  const look = () => updates().catch(warn("could not read run changes for the live view"));
  const notifications = app.store.notifications;
  let soon: NodeJS.Timeout | null = null;
  const unsubscribe =
    notifications?.onRunChanged(() => {
      soon ??= setTimeout(() => {
        soon = null;
        void look();
      }, 50);
    }) ?? (() => {});

  // Run changes are announced only while some process watches (drizzle-pg/0016): while a stream
  // is open here, this process's row says so for WATCH_MS and is renewed every RENEW_MS.
  const watcherId = newId();
  let watchedAt = Number.NEGATIVE_INFINITY;
  let later: NodeJS.Timeout | null = null;
  const watch = async () => {
    if (!notifications) return;
    const at = performance.now();
    await notifications.watchRuns(watcherId, WATCH_MS);
    watchedAt = at;
  };
  const watching = () => performance.now() - watchedAt < RENEW_MS;
  const unsubscribeOpened = app.bus.onSubscribe((subscribers) => {
    if (!notifications || (subscribers > 1 && watching())) return;
    // The first stream after an idle spell: what changed meanwhile is history to it, and what
    // changes from now on is news; a change whose statement ran before the row went in is caught
    // by the look just after it, or by the one a second later for a transaction still open then.
    const resumed = subscribers === 1 ? updates.resume() : Promise.resolve();
    void resumed
      .then(() => watch())
      .then(() => {
        void look();
        if (later) clearTimeout(later);
        later = setTimeout(() => void look(), 1_000);
      })
      .catch(warn("could not tell the database that a live view is open"));
  });
  const job = new Cron(notifications ? "*/10 * * * * *" : "*/2 * * * * *", { protect: true }, async () => {
    if (notifications && app.bus.hasSubscribers() && !watching()) await watch().catch(warn("could not tell the database that a live view is open"));
    await look();
  });
  return {
    stop() {
      job.stop();
      unsubscribe();
      unsubscribeOpened();
      if (soon) clearTimeout(soon);
      if (later) clearTimeout(later);
    },
  };
}

/** How long a watcher's row holds (PostgreSQL's clock), and how often an open live view renews it. */
const WATCH_MS = 60_000;
const RENEW_MS = 20_000;
