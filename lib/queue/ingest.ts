import type { App } from "../app";
import { capJson } from "../core/limits";

export interface IngestRequest {
  appletId: string;
  source: "webhook" | "schedule" | "rss" | "email" | "poll" | "manual";
  dedupeKey: string | null;
  payload: Record<string, unknown>;
  maxAttempts: number;
  receivedAt?: string;
  eventId?: string;
}

/**
 * "A run is a row before it is anything else": one transaction inserts the event and its queued
 * run. A duplicate dedupe key inserts nothing and returns null (logged at debug level).
 */
export function ingest(app: Pick<App, "repos" | "bus" | "clock" | "log">, req: IngestRequest): { eventId: string; runId: string } | null {
  const capped = capJson(req.payload);
  const payload = capped.truncated ? { ...(capped.value as Record<string, unknown>), truncated: true } : req.payload;
  const result = app.repos.runs.ingest({
    appletId: req.appletId,
    source: req.source,
    dedupeKey: req.dedupeKey,
    payloadJson: JSON.stringify(payload),
    receivedAt: req.receivedAt ?? app.clock.now().toISOString(),
    maxAttempts: req.maxAttempts,
    eventId: req.eventId,
  });
  if (!result) {
    app.log.debug("duplicate event ignored", { applet_id: req.appletId, dedupe_key: req.dedupeKey });
    return null;
  }
  app.bus.publish({ type: "run.queued", run_id: result.runId, applet_id: req.appletId, status: "queued" });
  return result;
}
