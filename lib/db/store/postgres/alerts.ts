import { newId } from "../../../core/ids";
import { DEFAULT_ALERT_SETTINGS, type AlertSettings, type AppletAlertState, type NewAlert } from "../types/alerts";
import { readChannel, toAlertRow, toAppletAlertState, type AlertRaw, type AppletAlertStateRaw } from "../alert-row";
import type { AlertPolicy, AlertRow, AlertsStore } from "../types";
import { query, type Begin, type Queryable } from "./pool";

/**
 * Alerts on PostgreSQL: the same statements as lib/db/store/sqlite/alerts.ts in this dialect.
 * `alertRecorder`'s `recordSettled` / `recordRetrying` / `recordPolled` run on the client of the
 * transaction that settles the run or stores the poll.
 */
const SELECT_ALERT = `SELECT al.id, al.applet_id, a.name AS applet_name, al.kind, al.run_id, al.error, al.detail, al.status, al.folded_into, al.message,
  al.channel_type, al.provider_answer, al.locked_until, al.dispatched_at, al.sent_at, al.created_at
  FROM alerts al LEFT JOIN applets a ON a.id = al.applet_id`;


async function settingsOn(q: Queryable): Promise<AlertSettings> {
  const r = (
    await query<{ channel: unknown; window_minutes: number; trigger_threshold: number; auto_pause: number; auto_pause_after: number; alert_on_retry: number; updated_at: string }>(
      q,
      "SELECT channel, window_minutes, trigger_threshold, auto_pause, auto_pause_after, alert_on_retry, updated_at FROM alert_settings WHERE id = 'default'",
    )
  ).rows[0];
  if (!r) return { ...DEFAULT_ALERT_SETTINGS };
  return { channel: readChannel(r.channel), windowMinutes: r.window_minutes, triggerThreshold: r.trigger_threshold, autoPause: r.auto_pause === 1, autoPauseAfter: r.auto_pause_after, alertOnRetry: r.alert_on_retry === 1, updatedAt: r.updated_at };
}

async function insertOn(q: Queryable, appletId: string | null, a: NewAlert, now: string): Promise<string> {
  const id = newId();
  await query(q, "INSERT INTO alerts (id, applet_id, kind, run_id, error, detail, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $7)", [
    id,
    appletId,
    a.kind,
    a.runId,
    a.error,
    JSON.stringify(a.detail),
    now,
  ]);
  return id;
}

async function stateOn(q: Queryable, appletId: string): Promise<AppletAlertState | null> {
  const r = (
    await query<AppletAlertStateRaw>(
      q,
      "SELECT name, enabled, failure_streak, alert_open, trigger_alert_open, alert_channel, auto_pause FROM applets WHERE id = $1 FOR UPDATE",
      [appletId],
    )
  ).rows[0];
  return r ? toAppletAlertState(r) : null;
}

/**
 * The recorder the settles and `savePolled` call inside their transactions (`c` is its client):
 * it writes what `policy` (the store's alert policy, given when it was opened) decides.
 */
export function alertRecorder(policy: AlertPolicy) {
  return {
    /** Whether a settle of this status reads the applet's alert state (`recordSettled`) at all. */
    settleNeedsAlertState: policy.settleNeedsAlertState,
    /** Inside the settle's transaction: what a settled run means for alerts and auto-pause. */
    recordSettled: async (c: Queryable, appletId: string, run: { id: string; status: string; error: string | null; attempt: number }, now: string): Promise<void> => {
      const state = await stateOn(c, appletId);
      if (!state) return;
      const decision = policy.onRunSettled(state, await settingsOn(c), run);
      for (const a of decision.alerts) await insertOn(c, appletId, a, now);
      if (decision.alertOpen !== state.alertOpen) await query(c, "UPDATE applets SET alert_open = $1 WHERE id = $2", [decision.alertOpen ? 1 : 0, appletId]);
      if (decision.pause) await query(c, "UPDATE applets SET enabled = 0, paused_reason = $1, paused_at = $2, disabled_at = $2, updated_at = $2 WHERE id = $3 AND enabled = 1", [decision.pause.reason, now, appletId]);
    },
    /** Inside retryLater's transaction: a run's attempt failed and the next one is scheduled. */
    recordRetrying: async (
      c: Queryable,
      appletId: string,
      run: { id: string; error: string | null; attempt: number; maxAttempts: number; nextAttemptAt: string },
      now: string,
    ): Promise<void> => {
      const settings = await settingsOn(c);
      if (!settings.alertOnRetry) return;
      const state = await stateOn(c, appletId);
      if (!state) return;
      const decision = policy.onRunRetrying(state, settings, run);
      if (!decision) return;
      for (const a of decision.alerts) await insertOn(c, appletId, a, now);
      if (decision.alertOpen !== state.alertOpen) await query(c, "UPDATE applets SET alert_open = $1 WHERE id = $2", [decision.alertOpen ? 1 : 0, appletId]);
    },
    /** Inside savePolled's transaction: a trigger's error count moved from `before` to `after`. */
    recordPolled: async (c: Queryable, appletId: string, before: number, after: number, error: string | null, now: string): Promise<void> => {
      if (before === after) return;
      const state = await stateOn(c, appletId);
      if (!state) return;
      const decision = policy.onPolled(state, await settingsOn(c), { before, after, error });
      if (!decision) return;
      for (const a of decision.alerts) await insertOn(c, appletId, a, now);
      if (decision.triggerAlertOpen !== state.triggerAlertOpen) await query(c, "UPDATE applets SET trigger_alert_open = $1 WHERE id = $2", [decision.triggerAlertOpen ? 1 : 0, appletId]);
    },
  };
}

export type AlertRecorder = ReturnType<typeof alertRecorder>;

export function alertsStore(q: Queryable, begin: Begin): AlertsStore {
  const rows = async (text: string, values: unknown[]): Promise<AlertRow[]> => (await query<AlertRaw>(q, text, values)).rows.map(toAlertRow);
  return {
    settings: () => settingsOn(q),
    saveSettings: async (s, now) => {
      await query(
        q,
        `INSERT INTO alert_settings (id, channel, window_minutes, trigger_threshold, auto_pause, auto_pause_after, alert_on_retry, created_at, updated_at)
         VALUES ('default', $1::json, $2, $3, $4, $5, $7, $6, $6)
         ON CONFLICT (id) DO UPDATE SET channel = excluded.channel, window_minutes = excluded.window_minutes, trigger_threshold = excluded.trigger_threshold,
           auto_pause = excluded.auto_pause, auto_pause_after = excluded.auto_pause_after, alert_on_retry = excluded.alert_on_retry, updated_at = excluded.updated_at`,
        [s.channel ? JSON.stringify(s.channel) : null, s.windowMinutes, s.triggerThreshold, s.autoPause ? 1 : 0, s.autoPauseAfter, now, s.alertOnRetry ? 1 : 0],
      );
    },
    setAppletAlerts: async (appletId, channel, autoPause, now) =>
      ((
        await query(q, "UPDATE applets SET alert_channel = $1::json, auto_pause = $2, updated_at = $3 WHERE id = $4", [
          channel === null ? null : JSON.stringify(channel),
          autoPause === null ? null : autoPause ? 1 : 0,
          now,
          appletId,
        ])
      ).rowCount ?? 0) === 1,
    insert: (a, now) => insertOn(q, a.appletId, a, now),
    pending: (limit) => rows(`${SELECT_ALERT} WHERE al.status = 'pending' ORDER BY al.created_at, al.id LIMIT $1`, [limit]),
    stale: (now) => rows(`${SELECT_ALERT} WHERE al.status = 'sending' AND (al.locked_until IS NULL OR al.locked_until < $1) ORDER BY al.created_at, al.id`, [now]),
    lastDispatchedAt: async (appletId) =>
      (await query<{ at: string | null }>(q, "SELECT MAX(dispatched_at) AS at FROM alerts WHERE applet_id IS NOT DISTINCT FROM $1::text AND dispatched_at IS NOT NULL", [appletId])).rows[0]?.at ?? null,
    beginSend: (id, folded, message, channelType, now, lockedUntil) =>
      begin(async (c) => {
        const r = await query(
          c,
          "UPDATE alerts SET status = 'sending', message = $2, channel_type = $3, locked_until = $4, dispatched_at = $5, updated_at = $5 WHERE id = $1 AND status = 'pending'",
          [id, message, channelType, lockedUntil, now],
        );
        if (r.rowCount !== 1) return false;
        if (folded.length)
          await query(c, "UPDATE alerts SET status = 'folded', folded_into = $1, updated_at = $2 WHERE id = ANY($3::text[]) AND status = 'pending'", [id, now, folded]);
        return true;
      }),
    relock: async (id, expected, lockedUntil, now) =>
      (
        await query(q, "UPDATE alerts SET locked_until = $1, updated_at = $2 WHERE id = $3 AND status = 'sending' AND locked_until IS NOT DISTINCT FROM $4::text", [
          lockedUntil,
          now,
          id,
          expected,
        ])
      ).rowCount === 1,
    markSent: async (id, now) => {
      await query(q, "UPDATE alerts SET status = 'sent', sent_at = $1, locked_until = NULL, provider_answer = NULL, updated_at = $1 WHERE id = $2", [now, id]);
    },
    markFailed: async (id, answer, now) => {
      await query(q, "UPDATE alerts SET status = 'failed', provider_answer = $1, locked_until = NULL, updated_at = $2 WHERE id = $3", [answer, now, id]);
    },
    skip: async (ids, reason, now) => {
      if (ids.length) await query(q, "UPDATE alerts SET status = 'skipped', provider_answer = $1, updated_at = $2 WHERE id = ANY($3::text[]) AND status = 'pending'", [reason, now, ids]);
    },
    recent: (limit) => rows(`${SELECT_ALERT} WHERE al.status <> 'folded' ORDER BY al.created_at DESC, al.id DESC LIMIT $1`, [limit]),
    deleteBefore: async (before, limit) =>
      (
        await query(
          q,
          "DELETE FROM alerts WHERE id IN (SELECT id FROM alerts WHERE created_at < $1 AND status NOT IN ('pending', 'sending') ORDER BY created_at LIMIT $2)",
          [before, limit],
        )
      ).rowCount ?? 0,
    foldedCount: async (id) => Number((await query<{ n: string }>(q, "SELECT COUNT(*) AS n FROM alerts WHERE folded_into = $1", [id])).rows[0]?.n ?? 0),
  };
}
