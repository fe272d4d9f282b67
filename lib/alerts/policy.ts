/**
 * Failure alerts and auto-pause: what a settled run or a stored poll means for alerts,
 * as pure decisions. The composition roots hand them to the store when they open it (`alertPolicy`
 * below), and both stores call them inside the transaction that settles the run (or stores the
 * poll) and write what they return, so an alert is recorded exactly when the failure is, and a
 * crash can lose neither or record it twice. Sending is lib/alerts/dispatch.ts's job.
 */

import type { AlertPolicy, RunSettledDecision } from "../db/store/types/alert-policy";
import type { AlertChannel, AlertSettings, AppletAlertChannel, AppletAlertState, NewAlert } from "../db/store/types/alerts";

export { DEFAULT_ALERT_SETTINGS } from "../db/store/types/alerts";
export type { AlertChannel, AlertKind, AlertSettings, AlertStatus, AppletAlertChannel, AppletAlertState, NewAlert } from "../db/store/types/alerts";
export type { AlertPolicy, RunSettledDecision } from "../db/store/types/alert-policy";

/** Whether alerts about this applet go anywhere: its own channel, or Settings' when it follows them. */
export function alertsOn(state: Pick<AppletAlertState, "alertChannel">, settings: Pick<AlertSettings, "channel">): boolean {
  if (state.alertChannel === null) return settings.channel !== null;
  return !("mode" in state.alertChannel);
}

/** The channel an applet's alerts go through, or null (none set, or "no alerts"). */
export function channelFor(appletChannel: AppletAlertChannel | undefined, settings: Pick<AlertSettings, "channel">): AlertChannel | null {
  if (appletChannel === undefined || appletChannel === null) return settings.channel;
  return "mode" in appletChannel ? null : appletChannel;
}

/**
 * A run reached a final status. `failed`/`dead`: an alert (when alerts go anywhere), and the
 * applet paused when auto-pause applies and the streak reached its bound. `succeeded`: a recovery
 * notice when a failure alert was recorded since the last success. `skipped` changes nothing.
 */
export function onRunSettled(
  state: AppletAlertState,
  settings: AlertSettings,
  run: { id: string; status: string; error: string | null; attempt: number },
): RunSettledDecision {
  const on = alertsOn(state, settings);
  if (run.status === "failed" || run.status === "dead") {
    const alerts: NewAlert[] = [];
    if (on) alerts.push({ kind: "failure", runId: run.id, error: run.error, detail: { status: run.status, attempt: run.attempt, streak: state.failureStreak } });
    let pause: RunSettledDecision["pause"] = null;
    const autoPause = state.autoPause ?? settings.autoPause;
    if (autoPause && state.enabled && state.failureStreak >= settings.autoPauseAfter) {
      pause = { reason: `Paused after ${state.failureStreak} failed runs in a row` };
      if (on) alerts.push({ kind: "paused", runId: run.id, error: run.error, detail: { streak: state.failureStreak, reason: pause.reason } });
    }
    return { alerts, alertOpen: state.alertOpen || on, pause };
  }
  if (run.status === "succeeded" && state.alertOpen) {
    return { alerts: on ? [{ kind: "recovery", runId: run.id, error: null, detail: { of: "runs" } }] : [], alertOpen: false, pause: null };
  }
  return { alerts: [], alertOpen: state.alertOpen, pause: null };
}

/**
 * A run's attempt failed and its next attempt is scheduled. With "alert on the first failed
 * attempt" chosen, the first attempt's failure records a failure alert right away (once per run:
 * later attempts that fail again say nothing until the run settles), and opens the alert state so
 * that a retry that then succeeds sends the recovery notice. Otherwise nothing happens until the
 * run settles.
 */
export function onRunRetrying(
  state: Pick<AppletAlertState, "alertChannel" | "alertOpen" | "failureStreak">,
  settings: Pick<AlertSettings, "channel" | "alertOnRetry">,
  run: { id: string; error: string | null; attempt: number; maxAttempts: number; nextAttemptAt: string },
): { alerts: NewAlert[]; alertOpen: boolean } | null {
  if (!settings.alertOnRetry || run.attempt !== 1 || !alertsOn(state, settings)) return null;
  return {
    alerts: [
      {
        kind: "failure",
        runId: run.id,
        error: run.error,
        detail: { status: "retrying", attempt: run.attempt, max_attempts: run.maxAttempts, next_attempt_at: run.nextAttemptAt, streak: state.failureStreak },
      },
    ],
    alertOpen: true,
  };
}

/** Whether a settle of this status needs the applet's alert state read at all (the hot path skips it). */
export const settleNeedsAlertState = (status: string, alertOpen: boolean): boolean => status === "failed" || status === "dead" || (status === "succeeded" && alertOpen);

/**
 * A poll's outcome was stored. Crossing the threshold of consecutive failed checks records one
 * alert (not one per check after it); the first good check after that, a recovery notice.
 */
export function onPolled(
  state: Pick<AppletAlertState, "alertChannel" | "triggerAlertOpen">,
  settings: AlertSettings,
  poll: { before: number; after: number; error: string | null },
): { alerts: NewAlert[]; triggerAlertOpen: boolean } | null {
  const on = alertsOn(state, settings);
  if (poll.after >= settings.triggerThreshold && poll.before < settings.triggerThreshold) {
    return {
      alerts: on ? [{ kind: "trigger", runId: null, error: poll.error, detail: { failures: poll.after } }] : [],
      triggerAlertOpen: state.triggerAlertOpen || on,
    };
  }
  if (poll.after === 0 && state.triggerAlertOpen) {
    return { alerts: on ? [{ kind: "recovery", runId: null, error: null, detail: { of: "trigger" } }] : [], triggerAlertOpen: false };
  }
  return null;
}

/** The decisions above, as the store takes them when it is opened (`openStore({ alertPolicy })`). */
export const alertPolicy: AlertPolicy = { settleNeedsAlertState, onRunSettled, onRunRetrying, onPolled };
