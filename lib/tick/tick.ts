import { processMetrics } from "../metrics";
import { ScheduleReconciler, type TickSummary } from "@whenthen/schedules";
import type { App } from "../app";
import { pollContext } from "../triggers/context";
import { errorMessage } from "../core/errors";
import { maxAttemptsOf, storedDefinition, type Definition } from "../definition";
import type { LedgerInsert } from "../db/store/types";
import { ingest, ingestSkipped } from "../queue/ingest";
import { firstRunOf, nextRunOf, POLLED_TRIGGERS, polledTrigger } from "../triggers";
import { emptyTriggerState, type PollContext, type PollResult, type TriggerState } from "../triggers/types";
import { newHolderId, withJobLock } from "./locks";
import { AppletScheduleAdapter } from "./schedule-adapter";
import { timingOfParsed } from "./timing";

/**
 * The scheduler tick (spec "Worker: Scheduler tick"), on @whenthen/schedules' reconciler over the
 * applet tables (./schedule-adapter):
 *
 * 1. list enabled schedule/rss/poll applets with next_run_at <= now;
 * 2. for each, claim the slot: next_run_at moves from the slot it was to the next slot after NOW
 *    (not after the missed slot: downtime gives one catch-up fire, no backlog). One worker wins;
 * 3. the winner runs the plug-in's poll with that slot and, in one transaction, ingests its events
 *    (deduped per plug-in: the slot for schedule and poll, the item key for rss) and stores the
 *    state it returned;
 * 4. an error in one applet lands in its trigger_state.last_error and the loop goes on.
 *
 * A process killed between the claim and the ingest transaction leaves the claimed slot marked
 * pending; the next tick fires it (recoverPendingSlots), keyed by the slot, so it fires once.
 */

export const SCHEDULER_TICK_LOCK = "scheduler_tick";
export const SCHEDULER_TICK_TTL_MS = 60_000;
/** Applets polled at once within a tick: feeds and APIs spend their time waiting on the network. */
const POLL_CONCURRENCY = 8;

type TickApp = Pick<App, "store" | "clock" | "log" | "bus" | "http" | "config" | "secrets">;

export interface SchedulerTickResult extends TickSummary {
  /** false: another instance holds the scheduler_tick lock, this tick did nothing. */
  ran: boolean;
  /** Events (and queued runs) created. */
  events: number;
}

const emptySummary = (): TickSummary => ({ fired: [], skipped: [], errored: [], lost: [] });

/**
 * One tick under the `scheduler_tick` job lock (TTL 60 s, renewed while running, released after).
 * `now` is the tick's time: tests pass their manual clock's.
 */
export async function runSchedulerTick(
  app: TickApp,
  now: Date = app.clock.now(),
  opts: { holder?: string; signal?: AbortSignal } = {},
): Promise<SchedulerTickResult> {
  const result = await withJobLock(app, SCHEDULER_TICK_LOCK, opts.holder ?? newHolderId(), SCHEDULER_TICK_TTL_MS, now, (lock) =>
    reconcileDue(app, now, { halted: lock.lost, signal: opts.signal }),
  );
  return result.ran ? { ran: true, ...result.value } : { ran: false, events: 0, ...emptySummary() };
}

/**
 * The tick without the job lock: every due slot is still claimed atomically, so two callers on
 * two connections fire each slot once. The lock only spares the second one the work.
 *
 * `signal` (the worker stopping) aborts the polls' requests and claims no further slot. An aborted
 * poll stores nothing: its slot stays pending, so a schedule's fire happens on the next tick, and
 * a feed's new items stay new until a later poll stores them.
 */
export async function reconcileDue(
  app: TickApp,
  now: Date,
  opts: { halted?: () => boolean; signal?: AbortSignal } = {},
): Promise<TickSummary & { events: number }> {
  const log = app.log.child("scheduler");
  const { signal } = opts;
  const halted = () => (opts.halted?.() ?? false) || (signal?.aborted ?? false);
  await adoptUnscheduled(app, now);
  const recovered = await recoverPendingSlots(app, now, signal);
  let events = 0;
  const reconciler = new ScheduleReconciler({
    adapter: new AppletScheduleAdapter(app, { halted }),
    kinds: POLLED_TRIGGERS,
    concurrency: POLL_CONCURRENCY,
    triggerFn: async (schedule) => {
      // Not `events += await …`: that reads `events` before the await and loses concurrent counts.
      const created = await pollApplet(app, schedule.id, schedule.nextRunAt, now, signal);
      events += created;
    },
    onError: (err, schedule) => {
      log.error("scheduler: applet failed", { applet_id: schedule?.id, error: errorMessage(err) });
      if (!schedule) return;
      app.store.triggerState.setLastError(schedule.id, `scheduler: ${errorMessage(err)}`, now.toISOString()).catch((recordErr: unknown) => {
        log.error("scheduler: could not record last_error", { applet_id: schedule.id, error: errorMessage(recordErr) });
      });
    },
    logger: { warn: (m) => log.warn(m) },
  });
  const summary = await reconciler.tick(now);
  return { ...summary, events: events + recovered };
}

/**
 * Polls one claimed applet and stores the outcome. Plug-in failures (network, parse, bad config)
 * become last_error and never reach the reconciler; only a database failure throws.
 */
async function pollApplet(app: TickApp, appletId: string, slot: Date, now: Date, signal?: AbortSignal): Promise<number> {
  if (signal?.aborted) return 0;
  const applet = await app.store.applets.get(appletId);
  if (!applet || !applet.enabled || !polledTrigger(applet.triggerType)) return 0;
  const def = storedDefinition(applet.definition);
  const plugin = polledTrigger(def.trigger.type);
  const before: TriggerState = (await app.store.triggerState.get(appletId)) ?? emptyTriggerState();
  const nowIso = now.toISOString();
  const parsed = plugin ? plugin.configSchema.safeParse(def.trigger.config) : null;

  let result: PollResult;
  if (!plugin || !parsed?.success) {
    const why = !plugin || !parsed || parsed.success ? `trigger "${def.trigger.type}" cannot be polled` : parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ");
    result = { events: [], state: { lastPolledAt: nowIso, lastError: `scheduler: invalid ${def.trigger.type} config: ${why}`, errorCount: before.errorCount + 1 } };
  } else {
    // A context per applet: it collects the secrets this poll rendered, and nothing it stores or
    // logs may carry them (a plug-in redacts what it compares; this is the backstop).
    const ctx: PollContext = pollContext(app, { signal });
    processMetrics().scheduleLateness.observe({ trigger: applet.triggerType }, Math.max(0, app.clock.now().getTime() - slot.getTime()) / 1000);
    try {
      result = ctx.redact(await plugin.poll(parsed.data, before, ctx, slot));
    } catch (err) {
      result = { events: [], state: { lastPolledAt: nowIso, lastError: ctx.redact(errorMessage(err)), errorCount: before.errorCount + 1 } };
    }
    if (signal?.aborted) return 0;
  }
  const after: TriggerState = { ...before, ...result.state, nextRunAt: before.nextRunAt };

  let created = 0;
  // The poll's events and its state commit together: a worker killed in between leaves the slot
  // pending (recoverPendingSlots), never events without the state that says they were seen.
  await app.store.transaction(async (tx) => {
    // The overlap policy asks what of the applet is still waiting or running, in this transaction.
    const overlap = result.overlap ?? "queue";
    const active = overlap === "queue" || result.events.length === 0 ? null : await tx.runs.activeOf(appletId);
    const ledger: LedgerInsert[] = [];
    for (const e of result.events) {
      const req = { appletId: appletId, source: plugin!.type, dedupeKey: e.dedupeKey, payload: e.payload, maxAttempts: maxAttemptsOf(def), receivedAt: nowIso, definition: def };
      const blocked = active !== null && (overlap === "skip" ? active.queued + active.running > 0 : active.queued > 0);
      if (blocked) {
        const why = overlap === "skip" ? (active.running > 0 ? "the previous run was still running" : "the previous run was still waiting") : "a run was already waiting";
        await ingestSkipped(app, req, `skipped: overlap (${why})`, tx);
        continue;
      }
      const r = await ingest(app, req, tx);
      if (r) {
        created++;
        if (active) active.queued++;
        if (e.note) ledger.push({ appletId, ...e.note, runId: r.runId });
      }
    }
    // The fire ledger: a late fire's row beside its run, and the slots that did not fire, in the
    // transaction of the poll's events (a crash keeps neither or both).
    for (const n of result.notes ?? []) ledger.push({ appletId, ...n });
    await tx.fires.record(ledger, nowIso);
    await tx.triggerState.savePolled(appletId, after, nowIso, slot.toISOString());
    // The claim chose the next slot from the state before the poll; when the poll changed what the
    // timing depends on (an RSS feed entering or leaving its back-off), move it, but only if it is
    // still the slot the claim wrote (a save in the meantime wins).
    if (plugin && parsed?.success && timingChanged(plugin.type, parsed.data, before, after)) {
      const claimed = nextRunOf(plugin, parsed.data, now, { ...before, nextRunAt: slot.toISOString() }).toISOString();
      const wanted = nextRunOf(plugin, parsed.data, now, { ...after, nextRunAt: slot.toISOString() }).toISOString();
      if (wanted !== claimed) await tx.triggerState.claimSlot(appletId, claimed, wanted, nowIso);
    }
  });
  if (result.state.lastError) {
    processMetrics().pollErrors.inc({ trigger: applet.triggerType });
    app.log.child("scheduler").warn("poll failed", { applet_id: appletId, type: applet.triggerType, error: result.state.lastError });
  }
  return created;
}

/**
 * A claimed slot whose outcome was never stored (the worker stopped between the claim and the
 * transaction that records its events). A schedule fires it now: its event is keyed by the slot,
 * so if the first worker did store it after all, this inserts nothing. A feed or a poll has nothing
 * to recover (its new items stay new until stored), and a disabled applet does not fire: their
 * marks are cleared.
 */
async function recoverPendingSlots(app: TickApp, now: Date, signal?: AbortSignal): Promise<number> {
  let created = 0;
  for (const row of await app.store.triggerState.listPending()) {
    if (signal?.aborted) break;
    const applet = await app.store.applets.get(row.applet_id);
    if (polledTrigger(row.trigger_type)?.refireLostSlot && applet?.enabled) {
      app.log.child("scheduler").warn("firing a schedule slot whose worker stopped before recording it", { applet_id: row.applet_id, slot: row.pending_slot });
      created += await pollApplet(app, row.applet_id, new Date(row.pending_slot), now, signal);
      if (signal?.aborted) break;
    }
    await app.store.triggerState.clearPending(row.applet_id, row.pending_slot);
  }
  return created;
}

const timingChanged = (type: string, config: unknown, before: TriggerState, after: TriggerState): boolean =>
  JSON.stringify(timingOfParsed(type, config, before)) !== JSON.stringify(timingOfParsed(type, config, after));

/**
 * An enabled polled applet whose next_run_at is null (spec: "next_run_at <= now (or null)") was
 * never scheduled, e.g. a row written by hand. It gets the slot the applet service would give it
 * on save: a schedule its next fire time, a feed or poll now. The write is conditional on the
 * null, so two workers agree on one value.
 */
async function adoptUnscheduled(app: TickApp, now: Date): Promise<void> {
  for (const row of await app.store.triggerState.listUnscheduled(POLLED_TRIGGERS)) {
    try {
      const plugin = polledTrigger(row.trigger_type);
      if (!plugin) throw new Error(`unknown polled trigger type "${row.trigger_type}"`);
      const config = (JSON.parse(row.definition) as Definition).trigger.config;
      const parsed = plugin.configSchema.safeParse(config);
      const state = (await app.store.triggerState.get(row.applet_id)) ?? emptyTriggerState();
      // The plug-in's first-run rule; a config that does not parse is looked at now (its poll reports why).
      const first = parsed.success ? firstRunOf(plugin, parsed.data, now, state) : now;
      await app.store.triggerState.claimSlot(row.applet_id, null, first.toISOString(), now.toISOString());
    } catch (err) {
      await app.store.triggerState.setLastError(row.applet_id, `scheduler: cannot schedule: ${errorMessage(err)}`, now.toISOString());
    }
  }
}
