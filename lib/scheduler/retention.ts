import type { App } from "../app";
import { deleteEventFiles } from "../files/events";
import { newHolderId, withJobLock } from "./locks";

export const RETENTION_LOCK = "retention";
export const RETENTION_TTL_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

export interface RetentionResult {
  /** false: another instance holds the retention lock. */
  ran: boolean;
  /** Events deleted (their attachment folders went with them). */
  deletedEvents: number;
  /** The cut-off: everything older was eligible. */
  before: string | null;
}

/**
 * Deletes runs and events older than RUN_RETENTION_DAYS, and the attachment folders of the
 * deleted events, under the `retention` job lock (TTL 10 minutes). Runs still queued or running
 * are kept, and so is an event one of them needs (lib/db/repos/runs deleteOlderThan).
 */
export async function runRetention(app: Pick<App, "repos" | "clock" | "log" | "config">, now: Date = app.clock.now(), opts: { holder?: string } = {}): Promise<RetentionResult> {
  const before = new Date(now.getTime() - app.config.runRetentionDays * DAY_MS).toISOString();
  const result = await withJobLock(app, RETENTION_LOCK, opts.holder ?? newHolderId(), RETENTION_TTL_MS, now, async () => {
    const eventIds = app.repos.runs.deleteOlderThan(before);
    for (const id of eventIds) {
      // One folder that cannot be removed (an id that is not ours, a permission problem) must not
      // keep the others: it is logged and the next hour's run does not see it again.
      await deleteEventFiles(app.config.dataDir, id).catch((err: unknown) =>
        app.log.child("retention").warn("could not delete an event's files", { event_id: id, error: err instanceof Error ? err.message : String(err) }),
      );
    }
    if (eventIds.length) app.log.child("retention").info("deleted old runs and events", { events: eventIds.length, before });
    return eventIds.length;
  });
  return result.ran ? { ran: true, deletedEvents: result.value, before } : { ran: false, deletedEvents: 0, before: null };
}
