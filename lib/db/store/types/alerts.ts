/**
 * The alerts' model, as the store keeps it: channels, settings, alert rows and the applet's alert
 * state. The decisions over them are lib/alerts/policy.ts's, handed to the store when it is opened
 * as its AlertPolicy (./alert-policy.ts).
 */

/**
 * A channel: an action plug-in's config without the message fields (whenthen writes those). The
 * type is an action that declares `alert`, checked against the action registry where a channel is
 * saved (lib/alerts/channel.ts), so the store names no plug-in.
 */
export interface AlertChannel {
  type: string;
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
