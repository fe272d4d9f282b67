/**
 * Why a timed run was cancelled or skipped, in plain words. Shared by the runs list, the
 * run page and the applet page; the reason codes are the ones @vibedout/automations writes. No
 * imports: client components use it.
 */
export const TIMED_REASONS = {
  superseded: "replaced by a newer version of the record",
  late: "its time had passed beyond the lateness window",
  quiet_hours: "inside quiet hours",
  frequency_cap: "frequency cap reached",
  no_anchor: "the anchor time was missing or not a time",
  rule_disabled: "the applet was disabled",
  stale: "the anchor time changed since it was planned",
} as const;

export type TimedReason = keyof typeof TIMED_REASONS;

export const TIMED_REASON_CODES = Object.keys(TIMED_REASONS) as TimedReason[];

export function isTimedReason(value: unknown): value is TimedReason {
  return typeof value === "string" && Object.prototype.hasOwnProperty.call(TIMED_REASONS, value);
}

/** The plain words for a reason; an unknown one (a future guard's) is shown as it is. */
export function reasonWords(reason: string | null | undefined): string {
  if (!reason) return "";
  return isTimedReason(reason) ? TIMED_REASONS[reason] : reason.replace(/_/g, " ");
}
