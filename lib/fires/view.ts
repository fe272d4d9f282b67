import { nextRunAfter } from "@whenthen/schedules";
import type { App } from "../app";
import type { Applet, LedgerEntry, LedgerOutcome } from "../db/store/types";
import { timingOf } from "../tick/timing";
import { polledTrigger, triggerRegistry } from "../triggers";
import { emptyTriggerState } from "../triggers/types";
import { quietApplets } from "./check";

/** How many upcoming fire times the applet page shows. */
export const NEXT_FIRES = 5;

/** The ledger as the API answers it (newest first). */
export const ledgerItem = (e: LedgerEntry) => ({ id: e.id, at: e.at, outcome: e.outcome, detail: e.detail, run_id: e.runId, run_status: e.runStatus, dedupe_key: e.dedupeKey, count: e.count });
export type LedgerItem = ReturnType<typeof ledgerItem>;

export async function ledgerPage(app: Pick<App, "store">, appletId: string, q: { outcome?: LedgerOutcome; before?: string | null; limit?: number }) {
  const page = await app.store.fires.list(appletId, { outcome: q.outcome, before: q.before ?? null, limit: q.limit ?? 50 });
  return { items: page.entries.map(ledgerItem), next_cursor: page.nextCursor };
}

/**
 * Expected activity as the applet page shows it: the user's expectation, whether the applet is
 * quiet and why, and for a schedule or a polled trigger its next fire times (with the zone they are
 * read in: the schedule's, or UTC for an interval).
 */
export async function activityView(app: Pick<App, "store" | "clock">, a: Applet) {
  const now = app.clock.now();
  const { quiet, activity } = await quietApplets(app, now, [a]);
  const own = activity.get(a.id);
  return {
    expect_every_hours: own?.expectEveryHours ?? null,
    last_event_at: own?.lastEventAt ?? null,
    quiet: quiet.get(a.id)?.text ?? null,
    quiet_alert_since: own?.quietSince ?? null,
    ...(await nextFires(app, a, now)),
  };
}

async function nextFires(app: Pick<App, "store">, a: Applet, now: Date): Promise<{ next_fires: string[]; zone: string | null }> {
  const plugin = polledTrigger(a.triggerType);
  if (!plugin || triggerRegistry.get(a.triggerType)?.feed !== "polled" || !a.enabled) return { next_fires: [], zone: null };
  const config = ((a.definition.trigger as { config?: unknown } | undefined)?.config ?? {}) as Record<string, unknown>;
  const state = (await app.store.triggerState.get(a.id)) ?? emptyTriggerState();
  try {
    const timing = timingOf(a.triggerType, config, state);
    const out: Date[] = [];
    const next = state.nextRunAt ? new Date(state.nextRunAt) : null;
    // A schedule's slots are its cron's; a poll's checks follow the next one the scheduler holds.
    let cursor = next && timing.cron === undefined ? next : now;
    if (timing.cron === undefined) out.push(cursor);
    while (out.length < NEXT_FIRES) out.push((cursor = nextRunAfter(timing, cursor)));
    return { next_fires: out.map((d) => d.toISOString()), zone: timing.cron !== undefined ? (timing.timezone ?? "UTC") : "UTC" };
  } catch {
    // A timing the stored config cannot give (the poll reports why in last_error).
    return { next_fires: [], zone: null };
  }
}
