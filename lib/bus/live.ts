import { Cron } from "croner";
import type { App } from "../app";
import type { Logger } from "../core/log";
import { publishRunUpdates } from "./poll";

/**
 * The web process's live view of runs (the SSE bus of GET /api/stream). The worker is another
 * process: a look at runs changed since the last look feeds the bus, every 2 s on SQLite. Where the
 * store announces run changes (PostgreSQL NOTIFY, from every worker and web process on every host),
 * each announcement triggers a look within 50 ms, and the timed look is only the safety net for a
 * dropped LISTEN connection (every 10 s). Shared by server.ts and the tests' web process, so a test
 * of two web processes exercises this wiring, not a copy of it.
 */
export function startLiveUpdates(app: Pick<App, "store" | "bus" | "clock">, log: Logger): { stop(): void } {
  const updates = publishRunUpdates(app);
  const look = () =>
    updates().catch((err: unknown) => log.warn("could not read run changes for the live view", { error: err instanceof Error ? err.message : String(err) }));
  let soon: NodeJS.Timeout | null = null;
  const unsubscribe =
    app.store.notifications?.onRunChanged(() => {
      soon ??= setTimeout(() => {
        soon = null;
        void look();
      }, 50);
    }) ?? (() => {});
  const job = new Cron(app.store.notifications ? "*/10 * * * * *" : "*/2 * * * * *", { protect: true }, look);
  return {
    stop() {
      job.stop();
      unsubscribe();
      if (soon) clearTimeout(soon);
    },
  };
}
