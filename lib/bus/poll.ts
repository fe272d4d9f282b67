import type { App } from "../app";

/**
 * Returns a function that publishes `run.updated` for every run whose updated_at moved since the
 * previous call. Runs it at most once at a time; starts from "now" so old history is not replayed.
 */
export function publishRunUpdates(app: Pick<App, "repos" | "bus" | "clock">): () => void {
  let since = app.clock.now().toISOString();
  return () => {
    for (;;) {
      const rows = app.repos.runs.updatedSince(since);
      for (const r of rows) {
        app.bus.publish({ type: "run.updated", run_id: r.id, applet_id: r.applet_id, status: r.status });
        since = r.updated_at;
      }
      if (rows.length < 500) return;
    }
  };
}
