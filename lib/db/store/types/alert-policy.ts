/**
 * What a settled run or a stored poll means for alerts, as the store needs to ask it: the store
 * records the answer inside the transaction that settles the run (or stores the poll), so an alert
 * is recorded exactly when the failure is, and a crash can neither lose it nor record it twice. The
 * decisions are the domain's (lib/alerts/policy.ts); the store is given them when it is opened
 * (`openStore({ alertPolicy })`), so it calls them without importing anything above it.
 */
import type { AlertSettings, AppletAlertState, NewAlert } from "./alerts";

/** What a run that reached a final status means: the alerts to record, the applet's alert state, an auto-pause. */
export interface RunSettledDecision {
  alerts: NewAlert[];
  alertOpen: boolean;
  /** Set when auto-pause disables the applet now. */
  pause: { reason: string } | null;
}

export interface AlertPolicy {
  /**
   * Whether a settle of this status needs the applet's alert state read at all (the hot path skips
   * it). PostgreSQL's one-statement settles (postgres/queue-sql.ts FINISH_AND_CLAIM) take its answer
   * for succeeded and skipped as given: a success needs it only while the applet's alert is open,
   * a skip never.
   */
  settleNeedsAlertState: (status: string, alertOpen: boolean) => boolean;
  /** A run reached a final status (the applet's failure streak already counts it). */
  onRunSettled: (state: AppletAlertState, settings: AlertSettings, run: { id: string; status: string; error: string | null; attempt: number }) => RunSettledDecision;
  /** A run's attempt failed and its next attempt is scheduled; null: nothing to record. */
  onRunRetrying: (
    state: Pick<AppletAlertState, "alertChannel" | "alertOpen" | "failureStreak">,
    settings: Pick<AlertSettings, "channel" | "alertOnRetry">,
    run: { id: string; error: string | null; attempt: number; maxAttempts: number; nextAttemptAt: string },
  ) => { alerts: NewAlert[]; alertOpen: boolean } | null;
  /** A poll's outcome was stored and its trigger's error count moved from `before` to `after`; null: nothing to record. */
  onPolled: (
    state: Pick<AppletAlertState, "alertChannel" | "triggerAlertOpen">,
    settings: AlertSettings,
    poll: { before: number; after: number; error: string | null },
  ) => { alerts: NewAlert[]; triggerAlertOpen: boolean } | null;
}
