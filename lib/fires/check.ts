import type { App } from "../app";
import { alertsOn } from "../alerts/policy";
import type { ActivityRow, Applet } from "../db/store/types";
import { triggerRegistry } from "../triggers";
import { storedDefinition, timezoneOf } from "../definition";
import { quietness, zonedWall, type Quiet } from "./quiet";

type CheckApp = Pick<App, "store" | "clock" | "log">;

/** The zone an applet's quiet texts are in: its own (stored definitions were checked on the way in). */
const zoneOf = (a: Applet) => timezoneOf(storedDefinition(a.definition));

export interface QuietCheckResult {
  /** Applets that went quiet in this pass (one alert each, when alerts go anywhere). */
  quiet: string[];
  /** Applets whose quiet alert closed in this pass (a recovery notice each). */
  recovered: string[];
}

export interface AppletQuiet extends Quiet {
  appletId: string;
}

/** Each applet's quiet state now, from what the store says (pure apart from the reads): the list, the page and /metrics. */
export async function quietApplets(app: Pick<App, "store">, now: Date, applets?: Applet[]): Promise<{ quiet: Map<string, AppletQuiet>; activity: Map<string, ActivityRow> }> {
  const [list, activity, overview] = await Promise.all([applets ? Promise.resolve(applets) : app.store.applets.list(), app.store.fires.activity(), app.store.triggerState.overview()]);
  const byApplet = new Map(activity.map((a) => [a.appletId, a]));
  const next = new Map(overview.map((o) => [o.appletId, o.nextRunAt]));
  const quiet = new Map<string, AppletQuiet>();
  for (const a of list) {
    const act = byApplet.get(a.id);
    const q = quietness(
      {
        triggerType: a.triggerType,
        feed: triggerRegistry.get(a.triggerType)?.feed,
        enabled: a.enabled,
        createdAt: a.createdAt,
        expectEveryHours: act?.expectEveryHours ?? null,
        expectSince: act?.expectSince ?? null,
        lastEventAt: act?.lastEventAt ?? null,
        nextRunAt: next.get(a.id) ?? null,
        zone: zoneOf(a),
      },
      now,
    );
    if (q) quiet.set(a.id, { ...q, appletId: a.id });
  }
  return { quiet, activity: byApplet };
}

/**
 * The quiet check (the worker runs it beside the alert dispatcher; `now` injected): an applet that
 * went quiet gets ONE alert through the existing alert machinery (kind "quiet"), recorded in the
 * transaction that opens its quiet state, and ONE recovery notice in the transaction that closes
 * it when events (or fires) come back. Opening and closing are conditional writes, so two workers
 * checking at once record each once. An applet disabled while quiet closes without a notice.
 */
export async function checkQuiet(app: CheckApp, now: Date = app.clock.now()): Promise<QuietCheckResult> {
  const result: QuietCheckResult = { quiet: [], recovered: [] };
  const applets = await app.store.applets.list();
  const { quiet, activity } = await quietApplets(app, now, applets);
  const settings = await app.store.alerts.settings();
  const nowIso = now.toISOString();
  for (const a of applets) {
    const q = quiet.get(a.id);
    const open = activity.get(a.id)?.quietSince ?? null;
    const on = alertsOn(a, settings);
    if (q && !open) {
      const opened = await app.store.transaction(async (tx) => {
        if (!(await tx.fires.openQuiet(a.id, q.text, nowIso))) return false;
        if (on) await tx.alerts.insert({ appletId: a.id, kind: "quiet", runId: null, error: null, detail: { text: q.text, basis: q.basis, last_at: q.lastAt, since: q.since } }, nowIso);
        return true;
      });
      if (opened) {
        result.quiet.push(a.id);
        app.log.child("activity").warn("an applet went quiet", { applet_id: a.id, text: q.text });
      }
    } else if (!q && open) {
      const act = activity.get(a.id);
      const closed = await app.store.transaction(async (tx) => {
        if (!(await tx.fires.closeQuiet(a.id, nowIso))) return false;
        if (on && a.enabled) {
          const back = act?.lastEventAt && act.lastEventAt > open ? `Events came back: the newest at ${zonedWall(act.lastEventAt, zoneOf(a))}.` : "It fires again as expected.";
          await tx.alerts.insert({ appletId: a.id, kind: "recovery", runId: null, error: null, detail: { of: "quiet", text: back, quiet_since: open } }, nowIso);
        }
        return true;
      });
      if (closed) result.recovered.push(a.id);
    }
  }
  return result;
}

/** How often the worker checks for quiet applets (a quiet applet is one hours or a slot late: a minute is soon enough). */
export const QUIET_CHECK_MS = 60_000;
