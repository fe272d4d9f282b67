import type { App } from "../app";
import { LIMITS, capJson } from "../core/limits";
import type { Ingested, IngestInput, StoreTx } from "../db/store";
import type { TriggerType } from "../triggers";
import { newId } from "../core/ids";
import type { Definition } from "../definition";
import { errorMessage } from "../core/errors";
import { planTimed } from "../timed/plan";
import { hasTimedActions } from "../timed/rule";
import { ingestControls, isDefaultControls } from "../definition/controls";

export interface IngestRequest {
  appletId: string;
  /** The trigger type that fed the event (lib/triggers registry), or "manual" for a test event. */
  source: TriggerType | "manual";
  dedupeKey: string | null;
  payload: Record<string, unknown>;
  maxAttempts: number;
  receivedAt?: string;
  eventId?: string;
  /**
   * The applet's definition: when it has timed actions, the event's planned runs are
   * made here with @vibedout/automations' planner and stored in the event's transaction; when it
   * has controls over runs, they give the run its lane, rate-limit slot or debounce window.
   * A caller that keeps only some definitions asks `ingestReads` which.
   */
  definition?: Definition;
}

/** Whether ingest reads this definition (timed actions or controls); without either it needs none. */
export function ingestReads(definition: Definition): boolean {
  return (Array.isArray(definition.steps) && hasTimedActions(definition)) || !isDefaultControls(definition.controls);
}

/** Spliced into the capped payload's JSON (always an object) instead of serializing it once more. */
const TRUNCATED_MARK = ',"truncated":true';

type IngestApp = Pick<App, "store" | "bus" | "clock" | "log">;

/**
 * Serialize once on the hot path; only an oversized payload pays for capping, which is linear in
 * its size (lib/core/limits capJson) and reuses this serialization.
 */
function toInput(app: IngestApp, req: IngestRequest): IngestInput {
  let payloadJson = JSON.stringify(req.payload);
  if (payloadJson.length > LIMITS.storedPayloadBytes / 4 && Buffer.byteLength(payloadJson) > LIMITS.storedPayloadBytes) {
    const capped = capJson(req.payload, LIMITS.storedPayloadBytes - TRUNCATED_MARK.length, payloadJson).json;
    payloadJson = capped === "{}" ? `{${TRUNCATED_MARK.slice(1)}}` : `${capped.slice(0, -1)}${TRUNCATED_MARK}}`;
  }
  const input: IngestInput = {
    appletId: req.appletId,
    source: req.source,
    dedupeKey: req.dedupeKey,
    payloadJson,
    receivedAt: req.receivedAt ?? app.clock.now().toISOString(),
    maxAttempts: req.maxAttempts,
    eventId: req.eventId,
  };
  if (req.definition && hasTimedActions(req.definition)) planInto(app, req, req.definition, input);
  // Controls over runs: only an applet that has some pays for them (its lane, rate slot, debounce).
  if (req.definition?.controls) {
    const controls = ingestControls(req.definition.controls, req.payload);
    if (controls) input.controls = controls;
  }
  return input;
}

/** Plans the event's timed actions into `input` (the store writes the plan with the event). */
function planInto(app: IngestApp, req: IngestRequest, definition: Definition, input: IngestInput): void {
  const eventId = input.eventId ?? newId();
  try {
    const planned = planTimed({ appletId: req.appletId, definition, payload: req.payload, eventId, receivedAt: Date.parse(input.receivedAt), maxAttempts: req.maxAttempts });
    for (const warning of planned.warnings) app.log.warn(`timed actions: ${warning}`, { applet_id: req.appletId, event_id: eventId });
    if (planned.write) {
      input.eventId = eventId;
      input.plan = planned.write;
    }
  } catch (err) {
    // A stored definition the planner refuses (older than the code's checks): the event is kept and
    // its untimed actions run; the timed ones are not planned, and the log says why.
    app.log.error("timed actions: could not plan this event", { applet_id: req.appletId, error: errorMessage(err) });
  }
}

/** A new run's row carries its event's received_at as updated_at (both stores): the version the bus is told. */
function announce(app: IngestApp, req: IngestRequest, input: IngestInput, result: Ingested): Ingested {
  if (!result) {
    app.log.debug("duplicate event ignored", { applet_id: req.appletId, dedupe_key: req.dedupeKey });
    return null;
  }
  app.bus.publish({ type: "run.queued", run_id: result.runId, applet_id: req.appletId, status: "queued" }, input.receivedAt);
  return result;
}

/**
 * "A run is a row before it is anything else": one transaction inserts the event and its queued
 * run. A duplicate dedupe key inserts nothing and returns null (logged at debug level).
 *
 * `tx`: part of a unit of work the caller holds (a scheduler tick stores a poll's events with its
 * state); the run is then announced on the bus before that commits, as it was before the seam.
 */
export async function ingest(app: IngestApp, req: IngestRequest, tx?: StoreTx): Promise<Ingested> {
  const input = toInput(app, req);
  return announce(app, req, input, await (tx ?? app.store).runs.ingest(input));
}

/**
 * An event whose run is not to execute (an overlap policy said skip): stored with a run that is
 * already skipped, with `reason`, so the run log shows what was not run and why.
 */
export async function ingestSkipped(app: IngestApp, req: IngestRequest, reason: string, tx?: StoreTx): Promise<Ingested> {
  // A skipped event plans no timed actions either: the policy said this event is not to run.
  const input = toInput(app, { ...req, definition: undefined });
  const result = await (tx ?? app.store).runs.ingestSkipped(input, reason);
  if (result) app.bus.publish({ type: "run.updated", run_id: result.runId, applet_id: req.appletId, status: "skipped" }, input.receivedAt);
  return result;
}

/**
 * The same, for the webhook hot path: requests that arrive in the same turn of the event loop are
 * committed together (group commit), and each promise resolves only after that commit. Under load
 * this turns one commit per webhook into one per batch; alone, a request waits one turn at most.
 */
export function createIngestBatcher(app: IngestApp, maxBatch = 256) {
  let pending: { req: IngestRequest; input: IngestInput; resolve: (r: Ingested) => void; reject: (e: Error) => void }[] = [];
  const flush = async () => {
    const batch = pending;
    if (batch.length === 0) return;
    pending = [];
    let results: (Ingested | Error)[];
    try {
      results = await app.store.runs.ingestMany(batch.map((b) => b.input));
    } catch (err) {
      for (const b of batch) b.reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    batch.forEach((b, i) => {
      const r = results[i]!;
      if (r instanceof Error) b.reject(r);
      else b.resolve(announce(app, b.req, b.input, r));
    });
  };
  return (req: IngestRequest): Promise<Ingested> =>
    new Promise((resolve, reject) => {
      if (pending.length === 0) setImmediate(() => void flush());
      pending.push({ req, input: toInput(app, req), resolve, reject });
      if (pending.length >= maxBatch) {
        // A full batch goes now; the scheduled flush then finds the next one (or nothing).
        void flush();
      }
    });
}
