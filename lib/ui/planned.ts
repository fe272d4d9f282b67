import { reasonWords } from "@/lib/timed/reasons";
import type { PlannedItem } from "./planned-api";

/**
 * How timed runs read on the screens, pure: the countdown to a due time, and why a run was
 * cancelled or skipped in plain words (the words themselves are lib/timed/reasons.ts', shared with
 * the API). Tests pass the clock.
 */

/**
 * "in 23 h 59 min", "in 4 min 12 s", "in 9 s", "due now"; for a due time that has passed (the
 * sweep has not picked it up yet), "due 2 min ago". Seconds only under an hour, days over two.
 */
export function countdown(dueAt: string | number, now: number): string {
  const due = typeof dueAt === "number" ? dueAt : Date.parse(dueAt);
  if (!Number.isFinite(due)) return "–";
  const diff = due - now;
  const abs = Math.abs(diff);
  if (abs < 1000) return "due now";
  const s = Math.floor(abs / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  let text: string;
  if (d >= 2) text = h ? `${d} d ${h} h` : `${d} d`;
  else if (s >= 3600) text = `${d * 24 + h} h ${m} min`;
  else if (s >= 60) text = `${m} min ${sec} s`;
  else text = `${sec} s`;
  return diff > 0 ? `in ${text}` : `due ${text} ago`;
}

/**
 * Why a timed run did not (or will not) send, as a sentence: "Cancelled: replaced by a newer
 * version of the record", "Skipped: inside quiet hours". null when there is no reason to give.
 */
export function reasonSentence(status: string, reason: string | null | undefined): string | null {
  const words = reasonWords(reason);
  if (!words) return null;
  const verb = status === "cancelled" ? "Cancelled" : status === "skipped" ? "Skipped" : status === "planned" || status === "pending" ? "Planned" : "Not sent";
  return `${verb}: ${words}`;
}

/** A planned run's record: "booking b_1, version 3"; null when it is about no named record. */
export function subjectWords(subjectId: string | null | undefined, subjectVersion: number | string | null | undefined, subjectType?: string | null): string | null {
  if (!subjectId) return null;
  const version = subjectVersion === null || subjectVersion === undefined || subjectVersion === "" ? "" : `, version ${subjectVersion}`;
  return `${subjectType && subjectType !== "record" ? `${subjectType} ` : ""}${subjectId}${version}`;
}

/** What a run row says about its timed run; all null for a run that was not planned. */
export interface TimedRunInfo {
  plannedRunId: string | null;
  dueAt: string | null;
  reason: string | null;
}

/** Whether a run is a timed one: planned for a due time, rather than run with its event. */
export const isTimedRun = (info: TimedRunInfo): boolean => info.plannedRunId !== null || info.dueAt !== null;

/**
 * The run log's "Error / reason" cell: a timed run's reason as a sentence, a filter's skip reason
 * (the `error` column holds it, after "skipped: "), else the error.
 */
export function runReasonCell(run: { status: string; error: string | null } & TimedRunInfo): { text: string; tone: "reason" | "error" } {
  const timed = reasonSentence(run.status, run.reason);
  if (timed) return { text: timed, tone: "reason" };
  if (run.status === "skipped" || run.status === "cancelled" || run.status === "planned" || run.status === "waiting") return { text: run.error?.replace(/^skipped: /, "") ?? "", tone: "reason" };
  return { text: run.error ?? "", tone: "error" };
}

/** The timed fields of a run row as GET /api/runs answers them. */
export const timedInfoOf = (run: TimedRunInfo): TimedRunInfo => ({ plannedRunId: run.plannedRunId, dueAt: run.dueAt, reason: run.reason });

// ---- the applet page's lists -----------------------------------------------------------------------

export const UPCOMING_LIMIT = 20;
export const RECENT_LIMIT = 10;

export interface PlannedLists {
  upcoming: PlannedItem[];
  /** Cancelled and skipped, the latest due first. */
  recent: PlannedItem[];
}

/** The lists from the pending runs and the cancelled and skipped ones: the latest of those first. */
export function plannedListsOf(pending: PlannedItem[], finished: PlannedItem[]): PlannedLists {
  const recent = [...finished].sort((a, b) => (Date.parse(b.dueAt ?? "") || 0) - (Date.parse(a.dueAt ?? "") || 0)).slice(0, RECENT_LIMIT);
  return { upcoming: pending, recent };
}
