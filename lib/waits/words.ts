import { localIso } from "../core/local-iso";
import type { StoredWait } from "../db/store/types";
import { sentToWords, type SentLinks } from "./sent";

/**
 * The run log's words for a waiting run (pure, and light enough for the browser, which says them
 * again in the reader's own zone).
 */
export const at = (d: Date, zone: string): string => localIso(d, zone).slice(0, 16).replace("T", " ");
const clockOf = (iso: string, zone: string): string => {
  const d = new Date(iso);
  return localIso(d, zone).slice(11, 16);
};

/**
 * What the run log says a waiting run waits for: "waiting for approval — sent to ops@example.com
 * at 14:02, times out 16:02". A time of the same day reads as a clock time, another with its date.
 */
export function waitSummary(w: Pick<StoredWait, "kind" | "detail" | "timeoutAt">, now: Date): string {
  const zone = typeof w.detail.timezone === "string" ? w.detail.timezone : "UTC";
  const until = typeof w.detail.until === "string" ? w.detail.until : null;
  const head =
    w.kind === "for_approval"
      ? "waiting for approval"
      : w.kind === "for_call"
        ? "waiting for a call to its resume URL"
        : until
          ? `waiting until ${at(new Date(until), zone)}${w.kind === "delay" && typeof w.detail.duration === "string" ? ` (${w.detail.duration})` : ""}`
          : "waiting";
  const when = (iso: string) => (sameDay(iso, now, zone) ? clockOf(iso, zone) : at(new Date(iso), zone));
  const sent = sentOf(w.detail.sent);
  const last = sent.reduce<string | null>((m, s) => (m === null || s.at > m ? s.at : m), null);
  const parts = [
    ...(sent.length && last ? [`sent to ${sentToWords(sent)} at ${when(last)}`] : []),
    ...(w.timeoutAt && (!until || Date.parse(w.timeoutAt) < Date.parse(until)) ? [`times out ${when(w.timeoutAt)}`] : []),
  ];
  return parts.length ? `${head} — ${parts.join(", ")}` : head;
}

/** The stored `detail.sent`, read defensively (detail is JSON from the database). */
function sentOf(v: unknown): SentLinks[] {
  if (!Array.isArray(v)) return [];
  return v.filter((s): s is SentLinks => typeof s === "object" && s !== null && typeof (s as SentLinks).to === "string" && typeof (s as SentLinks).at === "string" && !Number.isNaN(Date.parse((s as SentLinks).at)));
}

// A timeout within the day reads as a clock time; a later one with its date.
function sameDay(iso: string, now: Date, zone: string): boolean {
  return localIso(new Date(iso), zone).slice(0, 10) === localIso(now, zone).slice(0, 10);
}

