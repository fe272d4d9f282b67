/**
 * Failure alerts and auto-pause: what a settled run or a stored poll means for alerts,
 * as pure decisions. Both stores call these inside the transaction that settles the run (or stores
 * the poll) and write what they return, so an alert is recorded exactly when the failure is, and a
 * crash can lose neither or record it twice. Sending is lib/alerts/dispatch.ts's job.
 */

/** The action plug-ins an alert can go through. */
export const CHANNEL_TYPES = ["email", "slack", "discord", "push", "http", "homeassistant", "matrix", "gotify"] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/** A channel: an action plug-in's config without the message fields (whenthen writes those). */
export interface AlertChannel {
  type: ChannelType;
  config: Record<string, unknown>;
}

/** Per applet: null follows Settings, `{ mode: "none" }` sends nothing, or a channel of its own. */
export type AppletAlertChannel = null | { mode: "none" } | AlertChannel;

export interface AlertSettings {
  channel: AlertChannel | null;
  windowMinutes: number;
  /** Consecutive failed trigger checks (RSS, poll, schedule) before an alert. */
  triggerThreshold: number;
  /** The global default for applets that do not choose. */
  autoPause: boolean;
  autoPauseAfter: number;
  /**
   * Alert as soon as a run's first attempt fails and a retry is scheduled, instead of only when
   * the run has used up its attempts (which can be an hour or more later).
   */
  alertOnRetry: boolean;
  updatedAt: string | null;
}

export const DEFAULT_ALERT_SETTINGS: AlertSettings = {
  channel: null,
  windowMinutes: 15,
  triggerThreshold: 3,
  autoPause: false,
  autoPauseAfter: 5,
  alertOnRetry: false,
  updatedAt: null,
};

/** `quiet`: an applet went quiet beyond its expected activity (lib/fires/check.ts); its recovery has detail.of = "quiet". */
export type AlertKind = "failure" | "trigger" | "recovery" | "paused" | "test" | "quiet";
export type AlertStatus = "pending" | "sending" | "sent" | "failed" | "folded" | "skipped";

/** An alert to record; the store adds id, status and times. */
export interface NewAlert {
  kind: AlertKind;
  runId: string | null;
  error: string | null;
  detail: Record<string, unknown>;
}

/** What the store knows about the applet when a run settles (failure_streak already updated). */
export interface AppletAlertState {
  name: string;
  enabled: boolean;
  failureStreak: number;
  alertOpen: boolean;
  triggerAlertOpen: boolean;
  alertChannel: AppletAlertChannel;
  autoPause: boolean | null;
}

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

export interface RunSettledDecision {
  alerts: NewAlert[];
  alertOpen: boolean;
  /** Set when auto-pause disables the applet now. */
  pause: { reason: string } | null;
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
