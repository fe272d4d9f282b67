import type { App } from "../app";
import { LIMITS, capJson } from "../core/limits";

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
  // Serialize once on the hot path; only an oversized payload pays for capping.
  let payloadJson = JSON.stringify(req.payload);
  if (payloadJson.length > LIMITS.storedPayloadBytes / 4 && Buffer.byteLength(payloadJson) > LIMITS.storedPayloadBytes) {
    const capped = capJson(req.payload);
    payloadJson = JSON.stringify({ ...(capped.value as Record<string, unknown>), truncated: true });
  }
  const result = app.repos.runs.ingest({
    appletId: req.appletId,
    source: req.source,
    dedupeKey: req.dedupeKey,
    payloadJson,
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
