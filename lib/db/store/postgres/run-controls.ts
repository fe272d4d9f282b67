import { newId } from "../../../core/ids";
import { readJson } from "../json";
import { clipDetail } from "../ledger-sql";
import { admitStart, droppedReason, HELD_AGAIN_NOTED_MS, heldAgainDetail, heldDetail, MAX_MERGED_EVENTS, mergedDetail, rateSlot, readSlots, writeSlots } from "../run-controls";
import type { Ingested, IngestInput, RunControlsStore } from "../types";
import { query, type Begin, type Queryable } from "./pool";
import * as Q from "./queue-sql";

/**
 * Controls over runs on PostgreSQL: the statements of ../sqlite/run-controls.ts in this dialect.
 * `ingestControlled` runs inside a transaction of the caller's: the applet's state row is locked
 * first (created when missing), so the ingests of one applet with controls take turns, and a rate
 * limit's slots and a debounce window are read and written by one of them at a time, whatever the
 * number of web processes.
 */
export async function ingestControlled(c: Queryable, i: IngestInput, applyPlan: (c: Queryable) => Promise<void>): Promise<Ingested> {
  const ctl = i.controls!;
  const eventId = i.eventId ?? newId();
  const at = i.receivedAt;
  // The lock before the event: a duplicate inserts nothing either way, and the order of the
  // applet's ingests is the order of their locks.
  await query(
    c,
    `INSERT INTO run_control_state (applet_id, updated_at) VALUES ($1, $2) ON CONFLICT (applet_id) DO NOTHING`,
    [i.appletId, at],
  );
  const state = (
    await query<{ rate_slots: string; debounce_run_id: string | null; debounce_until: string | null }>(
      c,
      "SELECT rate_slots, debounce_run_id, debounce_until FROM run_control_state WHERE applet_id = $1 FOR UPDATE",
      [i.appletId],
    )
  ).rows[0];
  // The open window's run, locked while the event joins it: a claim skips it meanwhile (SKIP LOCKED),
  // and one that got there first has made it running, so the event opens a new window instead of
  // joining a run whose events were already read.
  const open =
    Boolean(ctl.debounceMs && state?.debounce_run_id && state.debounce_until && state.debounce_until > at) &&
    ((await query(c, "SELECT 1 FROM runs WHERE id = $1 AND status = 'queued' AND attempt = 1 FOR UPDATE", [state!.debounce_run_id])).rowCount ?? 0) > 0;
  if ((await query(c, Q.INSERT_EVENT, [eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, at])).rowCount !== 1) return null;
  const note = (outcome: "debounced" | "rate_limited", detail: string, runId: string) =>
    query(
      c,
      `INSERT INTO fire_ledger (id, applet_id, at, outcome, detail, run_id, dedupe_key, count, bucket, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 1, NULL, $3, $3)`,
      [newId(), i.appletId, at, outcome, clipDetail(detail), runId, i.dedupeKey],
    );
  if (open && state?.debounce_run_id && state.debounce_until) {
    await query(
      c,
      `INSERT INTO run_merged_events (run_id, seq, event_id)
       VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_merged_events WHERE run_id = $1), $2)`,
      [state.debounce_run_id, eventId],
    );
    await note("debounced", mergedDetail(state.debounce_until), state.debounce_run_id);
    return { eventId, runId: state.debounce_run_id };
  }
  const runId = newId();
  let due = Date.parse(at) + (ctl.debounceMs ?? 0);
  let slots = readSlots(state?.rate_slots);
  if (ctl.rate) {
    const decision = rateSlot(slots, due, ctl.rate.max, ctl.rate.periodMs);
    if (decision.slot > due && ctl.rate.overflow === "drop") {
      await query(
        c,
        `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, error, finished_at, created_at, updated_at, applet_version, lane)
         VALUES ($1, $2, $3, 'skipped', 1, $4, NULL, '[]', $5, $6, $6, $6, (SELECT MAX(v.version) FROM applet_versions v WHERE v.applet_id = $2), $7)`,
        [runId, i.appletId, eventId, i.maxAttempts, droppedReason(ctl.rate), at, ctl.lane],
      );
      return { eventId, runId };
    }
    if (decision.slot > due) await note("rate_limited", heldDetail(ctl.rate, new Date(decision.slot).toISOString()), runId);
    due = decision.slot;
    slots = decision.keep;
  }
  const dueIso = new Date(due).toISOString();
  await query(
    c,
    `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at, lane)
     VALUES ($1, $2, $3, 'queued', 1, $4, $5, '[]', $6, $6, $7)`,
    [runId, i.appletId, eventId, i.maxAttempts, dueIso, at, ctl.lane],
  );
  await query(c, `UPDATE run_control_state SET rate_slots = $2, debounce_run_id = $3, debounce_until = $4, updated_at = $5 WHERE applet_id = $1`, [
    i.appletId,
    writeSlots(slots),
    ctl.debounceMs ? runId : (state?.debounce_run_id ?? null),
    ctl.debounceMs ? dueIso : (state?.debounce_until ?? null),
    at,
  ]);
  if (i.plan) await applyPlan(c);
  return { eventId, runId };
}

export function runControlsStore(q: Queryable, begin: Begin): RunControlsStore {
  return {
    // The applet's state row is locked first (created when missing), as at ingest: the starts of
    // one applet take turns, whatever the number of workers.
    admitStart: (run, rate, now) =>
      begin(async (c) => {
        const at = now.toISOString();
        await query(c, "INSERT INTO run_control_state (applet_id, updated_at) VALUES ($1, $2) ON CONFLICT (applet_id) DO NOTHING", [run.appletId, at]);
        const state = (await query<{ rate_starts: string }>(c, "SELECT rate_starts FROM run_control_state WHERE applet_id = $1 FOR UPDATE", [run.appletId])).rows[0];
        const decision = admitStart(readSlots(state?.rate_starts), now.getTime(), rate.max, rate.periodMs);
        if (decision.admit) {
          await query(c, "UPDATE run_control_state SET rate_starts = $2, updated_at = $3 WHERE applet_id = $1", [run.appletId, writeSlots(decision.keep), at]);
          return "admitted";
        }
        const until = new Date(decision.until).toISOString();
        const held = await query(
          c,
          `UPDATE runs SET status = 'queued', next_attempt_at = $3, locked_by = NULL, locked_at = NULL, claim_token = NULL, started_at = NULL, updated_at = $4
           WHERE id = $1 AND claim_token = $2 AND status = 'running'`,
          [run.id, run.claimToken, until, at],
        );
        if (held.rowCount !== 1) return "lost";
        const moved =
          (await query(c, "UPDATE runs SET next_attempt_at = $2, updated_at = $3 WHERE applet_id = $1 AND status = 'queued' AND next_attempt_at < $2 AND id <> $4", [run.appletId, until, at, run.id]))
            .rowCount ?? 0;
        if (decision.until - now.getTime() > HELD_AGAIN_NOTED_MS) {
          await query(
            c,
            `INSERT INTO fire_ledger (id, applet_id, at, outcome, detail, run_id, dedupe_key, count, bucket, created_at, updated_at)
             VALUES ($1, $2, $3, 'rate_limited', $4, $5, NULL, 1, NULL, $3, $3)`,
            [newId(), run.appletId, at, clipDetail(heldAgainDetail(rate, until, moved)), run.id],
          );
        }
        return "held";
      }),
    mergedEvents: async (runId) =>
      (
        await query<{ id: string; payload: string; received_at: string }>(
          q,
          `SELECT e.id, e.payload::text AS payload, e.received_at FROM runs r JOIN events e ON e.id = r.event_id WHERE r.id = $1
           UNION ALL
           SELECT * FROM (SELECT e.id, e.payload::text AS payload, e.received_at FROM run_merged_events m JOIN events e ON e.id = m.event_id
                          WHERE m.run_id = $1 ORDER BY m.seq LIMIT $2) merged`,
          [runId, MAX_MERGED_EVENTS],
        )
      ).rows.map((e) => ({ id: e.id, receivedAt: e.received_at, payload: readJson<Record<string, unknown>>(e.payload, `the stored payload of event ${e.id}`) })),
  };
}
