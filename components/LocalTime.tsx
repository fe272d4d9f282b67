"use client";
import { useSyncExternalStore } from "react";
import { relativeTime } from "@/lib/ui/format";

const subscribe = () => () => {};
/** True in the browser after hydration; false while rendering on the server. */
export const useIsClient = () => useSyncExternalStore(subscribe, () => true, () => false);

// "Now" for relative times ("in 2 min") as a store the browser ticks: a render that read the clock
// itself would show whatever time it happened to run at, and never move on while the page stays open.
const NOW_TICK_MS = 15_000;
let now = Date.now();
let ticking: ReturnType<typeof setInterval> | undefined;
const nowListeners = new Set<() => void>();
function subscribeNow(onChange: () => void): () => void {
  nowListeners.add(onChange);
  if (!ticking) {
    // React reads the snapshot again after subscribing, so a stale `now` is replaced at once.
    now = Date.now();
    ticking = setInterval(() => {
      now = Date.now();
      for (const l of nowListeners) l();
    }, NOW_TICK_MS);
  }
  return () => {
    nowListeners.delete(onChange);
    if (nowListeners.size === 0) {
      clearInterval(ticking);
      ticking = undefined;
    }
  };
}
const useNow = () => useSyncExternalStore(subscribeNow, () => now, () => 0);

/**
 * A timestamp in the reader's own time zone, labelled with it ("CET"): one rule for every screen,
 * the runs filter's days included. The server does not know that zone, so it renders UTC and the
 * browser swaps in local time after hydration (no hydration mismatch). `compact` drops the date
 * when it is today, and the zone (its table names the zone once, above it).
 */
export function LocalTime({ iso, relative = false, compact = false, className }: { iso: string | null | undefined; relative?: boolean; compact?: boolean; className?: string }) {
  const client = useIsClient();
  const current = useNow();
  if (!iso) return <span className={className ?? "text-slate-400"}>–</span>;
  const d = new Date(iso);
  const text = client ? (compact ? compactTime(d, new Date()) : d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" })) : `${iso.slice(0, 19).replace("T", " ")} UTC`;
  return (
    <time dateTime={iso} title={iso} className={className}>
      {text}
      {relative && client ? <span className="ml-1 text-slate-500">({relativeTime(iso, current)})</span> : null}
    </time>
  );
}

/**
 * For narrow cells: the time alone when it is today, else the date (with the year only when it is
 * not this one) and the time. Unlike a relative "in 2 min" it does not go stale while the page
 * stays open.
 */
function compactTime(d: Date, now: Date): string {
  const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  if (d.toDateString() === now.toDateString()) return time;
  const sameYear = d.getFullYear() === now.getFullYear();
  return `${d.toLocaleDateString(undefined, { year: sameYear ? undefined : "numeric", month: "short", day: "numeric" })}, ${time}`;
}
