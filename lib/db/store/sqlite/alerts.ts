import { newId } from "../../../core/ids";
import { DEFAULT_ALERT_SETTINGS, type AlertSettings, type AppletAlertChannel, type AppletAlertState, type NewAlert } from "../types/alerts";
import type { AlertPolicy, AlertRow, SavedAlertSettings } from "../types";
import { readChannel, toAlertRow, toAppletAlertState, type AlertRaw, type AppletAlertStateRaw } from "../alert-row";
import type { Sqlite } from "./client";

const SELECT_ALERT = `SELECT al.*, a.name AS applet_name FROM alerts al LEFT JOIN applets a ON a.id = al.applet_id`;

/**
 * Alerts on SQLite: the settings row, the alerts table, and the recorder `runs.finish` and
 * `triggerState.savePolled` call inside their transactions, writing what `policy` (the store's
 * alert policy, given when it was opened) decides.
 */
export function createAlertsRepo(sqlite: Sqlite, policy: AlertPolicy) {
  const settingsRow = sqlite.prepare<[], { channel: string | null; window_minutes: number; trigger_threshold: number; auto_pause: number; auto_pause_after: number; alert_on_retry: number; updated_at: string }>(
    "SELECT channel, window_minutes, trigger_threshold, auto_pause, auto_pause_after, alert_on_retry, updated_at FROM alert_settings WHERE id = 'default'",
  );
  const insertAlert = sqlite.prepare(
    `INSERT INTO alerts (id, applet_id, kind, run_id, error, detail, status, created_at, updated_at)
     VALUES (@id, @appletId, @kind, @runId, @error, @detail, 'pending', @now, @now)`,
  );
  const appletState = sqlite.prepare<[string], AppletAlertStateRaw>(
    "SELECT name, enabled, failure_streak, alert_open, trigger_alert_open, alert_channel, auto_pause FROM applets WHERE id = ?",
  );
  const setAlertOpen = sqlite.prepare("UPDATE applets SET alert_open = ? WHERE id = ?");
  const setTriggerAlertOpen = sqlite.prepare("UPDATE applets SET trigger_alert_open = ? WHERE id = ?");
  const pause = sqlite.prepare("UPDATE applets SET enabled = 0, paused_reason = ?, paused_at = ?, disabled_at = ?, updated_at = ? WHERE id = ? AND enabled = 1");

  const settings = (): AlertSettings => {
    const r = settingsRow.get();
    if (!r) return { ...DEFAULT_ALERT_SETTINGS };
    return {
      channel: readChannel(r.channel),
      windowMinutes: r.window_minutes,
      triggerThreshold: r.trigger_threshold,
      autoPause: r.auto_pause === 1,
      autoPauseAfter: r.auto_pause_after,
      alertOnRetry: r.alert_on_retry === 1,
      updatedAt: r.updated_at,
    };
  };
  const insert = (appletId: string | null, a: NewAlert, now: string): string => {
    const id = newId();
    insertAlert.run({ id, appletId, kind: a.kind, runId: a.runId, error: a.error, detail: JSON.stringify(a.detail), now });
    return id;
  };
  const stateOf = (appletId: string): AppletAlertState | null => {
    const r = appletState.get(appletId);
    return r ? toAppletAlertState(r) : null;
  };

  return {
    /** Whether a settle of this status reads the applet's alert state (`recordSettled`) at all. */
    settleNeedsAlertState: policy.settleNeedsAlertState,
    /** Inside `runs.finish`'s transaction: what a settled run means for alerts and auto-pause. */
    recordSettled(appletId: string, run: { id: string; status: string; error: string | null; attempt: number }, now: string): void {
      const state = stateOf(appletId);
      if (!state) return;
      const decision = policy.onRunSettled(state, settings(), run);
      for (const a of decision.alerts) insert(appletId, a, now);
      if (decision.alertOpen !== state.alertOpen) setAlertOpen.run(decision.alertOpen ? 1 : 0, appletId);
      if (decision.pause) pause.run(decision.pause.reason, now, now, now, appletId);
    },
    /** Inside `runs.retryLater`'s transaction: a run's attempt failed and the next one is scheduled. */
    recordRetrying(appletId: string, run: { id: string; error: string | null; attempt: number; maxAttempts: number; nextAttemptAt: string }, now: string): void {
      const s = settings();
      if (!s.alertOnRetry) return;
      const state = stateOf(appletId);
      if (!state) return;
      const decision = policy.onRunRetrying(state, s, run);
      if (!decision) return;
      for (const a of decision.alerts) insert(appletId, a, now);
      if (decision.alertOpen !== state.alertOpen) setAlertOpen.run(decision.alertOpen ? 1 : 0, appletId);
    },
    /** Inside `savePolled`'s transaction: a trigger's error count moved from `before` to `after`. */
    recordPolled(appletId: string, before: number, after: number, error: string | null, now: string): void {
      if (before === after) return;
      const state = stateOf(appletId);
      if (!state) return;
      const decision = policy.onPolled(state, settings(), { before, after, error });
      if (!decision) return;
      for (const a of decision.alerts) insert(appletId, a, now);
      if (decision.triggerAlertOpen !== state.triggerAlertOpen) setTriggerAlertOpen.run(decision.triggerAlertOpen ? 1 : 0, appletId);
    },
    store: alertsStore(sqlite, settings, insert),
  };
}

/** The alerts aggregate's reads and writes outside the settles: settings, the queue of alerts the dispatcher sends, retention. */
function alertsStore(sqlite: Sqlite, settings: () => AlertSettings, insert: (appletId: string | null, a: NewAlert, now: string) => string) {
  const upsertSettings = sqlite.prepare(
    `INSERT INTO alert_settings (id, channel, window_minutes, trigger_threshold, auto_pause, auto_pause_after, alert_on_retry, created_at, updated_at)
     VALUES ('default', @channel, @window, @threshold, @autoPause, @after, @onRetry, @now, @now)
     ON CONFLICT (id) DO UPDATE SET channel = excluded.channel, window_minutes = excluded.window_minutes, trigger_threshold = excluded.trigger_threshold,
       auto_pause = excluded.auto_pause, auto_pause_after = excluded.auto_pause_after, alert_on_retry = excluded.alert_on_retry, updated_at = excluded.updated_at`,
  );
  const updateStatus = (sql: string) => sqlite.prepare(sql);
  const toSending = updateStatus(
    "UPDATE alerts SET status = 'sending', message = @message, channel_type = @channelType, locked_until = @lockedUntil, dispatched_at = @now, updated_at = @now WHERE id = @id AND status = 'pending'",
  );
  const toFolded = updateStatus("UPDATE alerts SET status = 'folded', folded_into = @into, updated_at = @now WHERE id = @id AND status = 'pending'");
  const beginSendTx = sqlite.transaction((id: string, folded: string[], message: string, channelType: string, now: string, lockedUntil: string): boolean => {
    if (toSending.run({ id, message, channelType, lockedUntil, now }).changes !== 1) return false;
    for (const f of folded) toFolded.run({ id: f, into: id, now });
    return true;
  });
  const skipStmt = updateStatus("UPDATE alerts SET status = 'skipped', provider_answer = @reason, updated_at = @now WHERE id = @id AND status = 'pending'");
  const skipTx = sqlite.transaction((ids: string[], reason: string, now: string) => {
    for (const id of ids) skipStmt.run({ id, reason, now });
  });

  return {
    settings,
    saveSettings: (s: SavedAlertSettings, now: string): void =>
      void upsertSettings.run({
        channel: s.channel ? JSON.stringify(s.channel) : null,
        window: s.windowMinutes,
        threshold: s.triggerThreshold,
        autoPause: s.autoPause ? 1 : 0,
        after: s.autoPauseAfter,
        onRetry: s.alertOnRetry ? 1 : 0,
        now,
      }),
    setAppletAlerts: (appletId: string, channel: AppletAlertChannel, autoPause: boolean | null, now: string): boolean =>
      sqlite
        .prepare("UPDATE applets SET alert_channel = ?, auto_pause = ?, updated_at = ? WHERE id = ?")
        .run(channel === null ? null : JSON.stringify(channel), autoPause === null ? null : autoPause ? 1 : 0, now, appletId).changes === 1,
    insert: (a: NewAlert & { appletId: string | null }, now: string): string => insert(a.appletId, a, now),
    pending: (limit: number): AlertRow[] =>
      sqlite.prepare<[number], AlertRaw>(`${SELECT_ALERT} WHERE al.status = 'pending' ORDER BY al.created_at, al.id LIMIT ?`).all(limit).map(toAlertRow),
    stale: (now: string): AlertRow[] =>
      sqlite.prepare<[string], AlertRaw>(`${SELECT_ALERT} WHERE al.status = 'sending' AND (al.locked_until IS NULL OR al.locked_until < ?) ORDER BY al.created_at, al.id`).all(now).map(toAlertRow),
    lastDispatchedAt: (appletId: string | null): string | null =>
      sqlite
        .prepare<[string | null], { at: string | null }>("SELECT MAX(dispatched_at) AS at FROM alerts WHERE applet_id IS ? AND dispatched_at IS NOT NULL")
        .get(appletId)?.at ?? null,
    beginSend: (id: string, folded: string[], message: string, channelType: string, now: string, lockedUntil: string): boolean =>
      beginSendTx(id, folded, message, channelType, now, lockedUntil),
    relock: (id: string, expected: string | null, lockedUntil: string, now: string): boolean =>
      sqlite.prepare("UPDATE alerts SET locked_until = ?, updated_at = ? WHERE id = ? AND status = 'sending' AND locked_until IS ?").run(lockedUntil, now, id, expected).changes === 1,
    markSent: (id: string, now: string): void =>
      void sqlite.prepare("UPDATE alerts SET status = 'sent', sent_at = ?, locked_until = NULL, provider_answer = NULL, updated_at = ? WHERE id = ?").run(now, now, id),
    markFailed: (id: string, answer: string, now: string): void =>
      void sqlite.prepare("UPDATE alerts SET status = 'failed', provider_answer = ?, locked_until = NULL, updated_at = ? WHERE id = ?").run(answer, now, id),
    skip: (ids: string[], reason: string, now: string): void => skipTx(ids, reason, now),
    recent: (limit: number): AlertRow[] =>
      sqlite.prepare<[number], AlertRaw>(`${SELECT_ALERT} WHERE al.status <> 'folded' ORDER BY al.created_at DESC, al.id DESC LIMIT ?`).all(limit).map(toAlertRow),
    deleteBefore: (before: string, limit: number): number =>
      sqlite
        .prepare("DELETE FROM alerts WHERE id IN (SELECT id FROM alerts WHERE created_at < ? AND status NOT IN ('pending', 'sending') ORDER BY created_at LIMIT ?)")
        .run(before, limit).changes,
    foldedCount: (id: string): number =>
      Number(sqlite.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM alerts WHERE folded_into = ?").get(id)?.n ?? 0),
  };
}

export type AlertsRepo = ReturnType<typeof createAlertsRepo>;
