/**
 * The alerts aggregate: settings, alert rows, the dispatcher's claims (./alerts.ts is the alerts'
 * model).
 */
import type { AlertKind, AlertSettings, AlertStatus, AppletAlertChannel, NewAlert } from "./alerts";

/** The alert settings as saved. */
export type SavedAlertSettings = Omit<AlertSettings, "updatedAt" | "alertOnRetry"> & { alertOnRetry?: boolean };

/** An alert as Settings lists it and the dispatcher reads it. */
export interface AlertRow {
  id: string;
  appletId: string | null;
  /** The applet's name, joined (null for a test alert or an applet deleted since). */
  appletName: string | null;
  kind: AlertKind;
  runId: string | null;
  error: string | null;
  detail: Record<string, unknown>;
  status: AlertStatus;
  foldedInto: string | null;
  message: string | null;
  channelType: string | null;
  providerAnswer: string | null;
  lockedUntil: string | null;
  dispatchedAt: string | null;
  sentAt: string | null;
  createdAt: string;
}

/**
 * Alerts. Failure, pause and recovery alerts are recorded by `runs.finish` /
 * `finishAndClaim` and trigger alerts by `triggerState.savePolled`, in their transaction, from the
 * decisions of the store's alert policy (./alert-policy.ts; lib/alerts/policy.ts's, given when the
 * store is opened); the dispatcher (lib/alerts/dispatch) sends them under the
 * `alerts` job lock. A send is: `beginSend` (commit the message and the folded ones), the
 * provider's request, then `markSent` / `markFailed`; a `sending` row whose lock passed (its worker
 * died mid-send) is sent again with the same message and idempotency key.
 */
export interface AlertsStore {
  /** The settings row, or the defaults (DEFAULT_ALERT_SETTINGS) when none was saved. */
  settings(): Promise<AlertSettings>;
  /** Upserts the one settings row (updatedAt is `now`). */
  /** `alertOnRetry` left out is off (alerts when runs settle, as before it existed). */
  saveSettings(s: SavedAlertSettings, now: string): Promise<void>;
  /** The applet's channel override and auto-pause choice; false: no such applet. */
  setAppletAlerts(appletId: string, channel: AppletAlertChannel, autoPause: boolean | null, now: string): Promise<boolean>;
  /** Records an alert outside a settle (a test alert from Settings); its id. */
  insert(a: NewAlert & { appletId: string | null }, now: string): Promise<string>;
  /** Pending alerts, oldest first (created_at, id), at most `limit`. */
  pending(limit: number): Promise<AlertRow[]>;
  /** `sending` alerts whose lock ended before `now` (their sender stopped mid-send). */
  stale(now: string): Promise<AlertRow[]>;
  /** When an alert of this applet was last handed to a provider (sent or failed), or null. */
  lastDispatchedAt(appletId: string | null): Promise<string | null>;
  /**
   * Moves `id` from pending to sending with its message, channel type and lock, and `folded` (still
   * pending) to folded into it, in one transaction; false (nothing changed) when `id` is no longer pending.
   */
  beginSend(id: string, folded: string[], message: string, channelType: string, now: string, lockedUntil: string): Promise<boolean>;
  /** Renews a stale send's lock before sending it again; false when it is no longer sending with that lock. */
  relock(id: string, expected: string | null, lockedUntil: string, now: string): Promise<boolean>;
  markSent(id: string, now: string): Promise<void>;
  /** The provider's answer, already redacted. */
  markFailed(id: string, answer: string, now: string): Promise<void>;
  /** Pending alerts that have nowhere to go (no channel): skipped, with the reason as their answer. */
  skip(ids: string[], reason: string, now: string): Promise<void>;
  /** The latest alerts, newest first (created_at desc, id desc), folded ones left out. */
  recent(limit: number): Promise<AlertRow[]>;
  /** How many alerts were folded into this one. */
  foldedCount(id: string): Promise<number>;
  /** Retention: deletes at most `limit` alerts created before `before` that are done (not pending or sending); how many. */
  deleteBefore(before: string, limit: number): Promise<number>;
}
