import type { App } from "../app";
import { errorMessage } from "../core/errors";
import { storedDefinition } from "../definition";
import { laneOf } from "../definition/controls";

/**
 * The Replay button: a fresh run of the same event, in the lane its event would get now. With
 * per-key concurrency that is the key rendered again on the event, so a replay never runs beside a
 * run of the same key; a replay in the default lane ran beside them. When the event cannot be read
 * (its payload is not JSON) the store keeps the original run's lane. Null: no such run.
 */
export async function replayRun(app: Pick<App, "store" | "clock" | "log">, runId: string): Promise<string | null> {
  const run = await app.store.runs.get(runId);
  if (!run) return null;
  let lane: string | undefined;
  const applet = await app.store.applets.get(run.appletId);
  if (applet) {
    try {
      const event = await app.store.runs.event(run.eventId);
      if (event) lane = laneOf(storedDefinition(applet.definition).controls, event.payload);
    } catch (err) {
      app.log.child("queue").warn("replay: the event could not be read; the replay keeps the original run's lane", { run_id: runId, error: errorMessage(err) });
    }
  }
  return app.store.runs.replay(run.id, app.clock.now(), { lane });
}
