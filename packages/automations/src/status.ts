import type { MessageStatus, RunStatus } from "./types";

export const RUN_STATUSES: readonly RunStatus[] = ["pending", "running", "done", "failed", "cancelled", "skipped"];
export const FINISHED_RUN_STATUSES: readonly RunStatus[] = ["done", "failed", "cancelled", "skipped"];

/** The reasons this package writes; guards and actions may give their own. */
export const RUN_REASONS = ["superseded", "late", "no_anchor", "quiet_hours", "rule_disabled", "frequency_cap", "stale", "no_consent"] as const;

/** Lowest first. The failures come last: a failure outranks every success and ends the message. */
export const MESSAGE_STATUS_RANK: readonly MessageStatus[] = ["queued", "sent", "deferred", "delivered", "read", "rejected", "failed", "bounced", "complained"];
export const MESSAGE_STATUSES: readonly MessageStatus[] = [...MESSAGE_STATUS_RANK, "received"];
export const MESSAGE_FAILURE_STATUSES: readonly MessageStatus[] = ["rejected", "failed", "bounced", "complained"];

export function isMessageStatus(value: unknown): value is MessageStatus {
  return typeof value === "string" && (MESSAGE_STATUSES as readonly string[]).includes(value);
}

/**
 * The status after an update arrives. Providers deliver updates out of order, so the status only
 * moves up the rank: a late `delivered` does not undo `read`, and a failure outranks every
 * success. `received` (an inbound message) never changes, and nothing outbound becomes it.
 */
export function advanceMessageStatus(current: MessageStatus | null | undefined, next: MessageStatus): MessageStatus {
  if (current === null || current === undefined) return next;
  if (current === "received" || next === "received") return current;
  const from = MESSAGE_STATUS_RANK.indexOf(current);
  const to = MESSAGE_STATUS_RANK.indexOf(next);
  if (to < 0) return current;
  return to > from ? next : current;
}
