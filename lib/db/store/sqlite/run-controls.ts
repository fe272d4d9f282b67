import { newId } from "../../../core/ids";
import { readJson } from "../json";
import { clipDetail } from "../ledger-sql";
import { admitStart, droppedReason, HELD_AGAIN_NOTED_MS, heldAgainDetail, heldDetail, MAX_MERGED_EVENTS, mergedDetail, rateSlot, readSlots, writeSlots } from "../run-controls";
import type { ClaimedRun, Ingested, IngestControls, IngestInput, MergedEvent, PlanWrite } from "../types";
import type { Sqlite } from "./client";
import { INSERT_EVENT_SQL } from "./runs-ingest";

/**
 * Controls over runs on SQLite (../run-controls.ts): the ingest of an event whose applet has
 * controls (its lane, rate-limit slot, debounce window), inside the caller's transaction, and the
 * read of a debounced run's merged events. SQLite has one writer, so reading the applet's state
 * row and writing it back cannot interleave with another ingest.
 */
export function createRunControlsRepo(sqlite: Sqlite, applyPlan: (plan: PlanWrite) => unknown) {
  const insertEvent = sqlite.prepare(INSERT_EVENT_SQL);
  const insertRun = sqlite.prepare(
    `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at, lane)
     VALUES (@id, @applet, @event, 'queued', 1, @maxAttempts, @due, '[]', @at, @at, @lane)`,
  );
  const insertSkipped = sqlite.prepare(
    `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, error, finished_at, created_at, updated_at, applet_version, lane)
     VALUES (@id, @applet, @event, 'skipped', 1, @maxAttempts, NULL, '[]', @error, @at, @at, @at, (SELECT MAX(version) FROM applet_versions WHERE applet_id = @applet), @lane)`,
  );
  const stateOf = sqlite.prepare<[string], { rate_slots: string; debounce_run_id: string | null; debounce_until: string | null }>(
    "SELECT rate_slots, debounce_run_id, debounce_until FROM run_control_state WHERE applet_id = ?",
  );
  const saveState = sqlite.prepare(
    `INSERT INTO run_control_state (applet_id, rate_slots, debounce_run_id, debounce_until, updated_at) VALUES (@applet, @slots, @runId, @until, @at)
     ON CONFLICT (applet_id) DO UPDATE SET rate_slots = excluded.rate_slots, debounce_run_id = excluded.debounce_run_id,
       debounce_until = excluded.debounce_until, updated_at = excluded.updated_at`,
  );
  const queuedRun = sqlite.prepare<[string], { next_attempt_at: string }>("SELECT next_attempt_at FROM runs WHERE id = ? AND status = 'queued' AND attempt = 1");
  const merge = sqlite.prepare(
    "INSERT INTO run_merged_events (run_id, seq, event_id) VALUES (@runId, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_merged_events WHERE run_id = @runId), @event)",
  );
  const ledger = sqlite.prepare(
    `INSERT INTO fire_ledger (id, applet_id, at, outcome, detail, run_id, dedupe_key, count, bucket, created_at, updated_at)
     VALUES (@id, @applet, @at, @outcome, @detail, @runId, @dedupeKey, 1, NULL, @at, @at)`,
  );
  const merged = sqlite.prepare<{ runId: string; limit: number }, { id: string; payload: string; received_at: string }>(
    `SELECT e.id, e.payload, e.received_at FROM runs r JOIN events e ON e.id = r.event_id WHERE r.id = @runId
     UNION ALL
     SELECT * FROM (SELECT e.id, e.payload, e.received_at FROM run_merged_events m JOIN events e ON e.id = m.event_id
                    WHERE m.run_id = @runId ORDER BY m.seq LIMIT @limit)`,
  );

  const startsOf = sqlite.prepare<[string], { rate_starts: string }>("SELECT rate_starts FROM run_control_state WHERE applet_id = ?");
  const saveStarts = sqlite.prepare(
    `INSERT INTO run_control_state (applet_id, rate_starts, updated_at) VALUES (@applet, @starts, @at)
     ON CONFLICT (applet_id) DO UPDATE SET rate_starts = excluded.rate_starts, updated_at = excluded.updated_at`,
  );
  const holdRun = sqlite.prepare(
    `UPDATE runs SET status = 'queued', next_attempt_at = @until, locked_by = NULL, locked_at = NULL, claim_token = NULL, started_at = NULL, updated_at = @at
     WHERE id = @id AND claim_token = @token AND status = 'running'`,
  );
  const holdOthers = sqlite.prepare(
    "UPDATE runs SET next_attempt_at = @until, updated_at = @at WHERE applet_id = @applet AND status = 'queued' AND next_attempt_at < @until AND id <> @id",
  );
  // One writer: the read of the starts and their write cannot interleave with another start.
  const admit = sqlite.transaction((run: Pick<ClaimedRun, "id" | "appletId" | "claimToken">, rate: NonNullable<IngestControls["rate"]>, now: Date): "admitted" | "held" | "lost" => {
    const at = now.toISOString();
    const decision = admitStart(readSlots(startsOf.get(run.appletId)?.rate_starts), now.getTime(), rate.max, rate.periodMs);
    if (decision.admit) {
      saveStarts.run({ applet: run.appletId, starts: writeSlots(decision.keep), at });
      return "admitted";
    }
    const until = new Date(decision.until).toISOString();
    if (holdRun.run({ id: run.id, token: run.claimToken, until, at }).changes !== 1) return "lost";
    const moved = holdOthers.run({ applet: run.appletId, until, at, id: run.id }).changes;
    if (decision.until - now.getTime() > HELD_AGAIN_NOTED_MS) {
      ledger.run({ id: newId(), applet: run.appletId, at, outcome: "rate_limited", detail: clipDetail(heldAgainDetail(rate, until, moved)), runId: run.id, dedupeKey: null });
    }
    return "held";
  });

  const ingest = (i: IngestInput): Ingested => {
    const c = i.controls!;
    const eventId = i.eventId ?? newId();
    const at = i.receivedAt;
    if (insertEvent.run(eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, at, at, at).changes === 0) return null;
    const state = stateOf.get(i.appletId);
    const note = (outcome: "debounced" | "rate_limited", detail: string, runId: string) =>
      ledger.run({ id: newId(), applet: i.appletId, at, outcome, detail: clipDetail(detail), runId, dedupeKey: i.dedupeKey });
    // An open window whose run has not started: the event joins it.
    if (c.debounceMs && state?.debounce_run_id && state.debounce_until && state.debounce_until > at && queuedRun.get(state.debounce_run_id)) {
      merge.run({ runId: state.debounce_run_id, event: eventId });
      note("debounced", mergedDetail(state.debounce_until), state.debounce_run_id);
      return { eventId, runId: state.debounce_run_id };
    }
    const runId = newId();
    let due = Date.parse(at) + (c.debounceMs ?? 0);
    let slots = readSlots(state?.rate_slots);
    if (c.rate) {
      const decision = rateSlot(slots, due, c.rate.max, c.rate.periodMs);
      if (decision.slot > due && c.rate.overflow === "drop") {
        insertSkipped.run({ id: runId, applet: i.appletId, event: eventId, maxAttempts: i.maxAttempts, error: droppedReason(c.rate), at, lane: c.lane });
        return { eventId, runId };
      }
      if (decision.slot > due) note("rate_limited", heldDetail(c.rate, new Date(decision.slot).toISOString()), runId);
      due = decision.slot;
      slots = decision.keep;
    }
    const dueIso = new Date(due).toISOString();
    insertRun.run({ id: runId, applet: i.appletId, event: eventId, maxAttempts: i.maxAttempts, due: dueIso, at, lane: c.lane });
    saveState.run({
      applet: i.appletId,
      slots: writeSlots(slots),
      runId: c.debounceMs ? runId : (state?.debounce_run_id ?? null),
      until: c.debounceMs ? dueIso : (state?.debounce_until ?? null),
      at,
    });
    if (i.plan) applyPlan(i.plan);
    return { eventId, runId };
  };

  return {
    /** Called by the runs repo inside its ingest transaction for an input with `controls`. */
    ingest,
    /** A claimed run of a rate-limited applet, before it starts: admitted, held again, or lost (RunControlsStore.admitStart). */
    admitStart: (run: Pick<ClaimedRun, "id" | "appletId" | "claimToken">, rate: NonNullable<IngestControls["rate"]>, now: Date) => admit.immediate(run, rate, now),
    /** A debounced run's events, oldest first: its own, then those merged into it. */
    mergedEvents: (runId: string): MergedEvent[] =>
      merged.all({ runId, limit: MAX_MERGED_EVENTS }).map((e) => ({ id: e.id, receivedAt: e.received_at, payload: readJson<Record<string, unknown>>(e.payload, `the stored payload of event ${e.id}`) })),
  };
}
