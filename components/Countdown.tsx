"use client";
import { useSyncExternalStore } from "react";
import { countdown } from "@/lib/ui/planned";

// One 1-second clock for every countdown on the page, running only while one is shown.
let now = Date.now();
let ticking: ReturnType<typeof setInterval> | undefined;
const listeners = new Set<() => void>();
function subscribe(onChange: () => void): () => void {
  listeners.add(onChange);
  if (!ticking) {
    now = Date.now();
    ticking = setInterval(() => {
      now = Date.now();
      for (const l of listeners) l();
    }, 1000);
  }
  return () => {
    listeners.delete(onChange);
    if (listeners.size === 0) {
      clearInterval(ticking);
      ticking = undefined;
    }
  };
}

/**
 * "in 23 h 59 min", ticking every second (Upcoming list). The server has no reader's clock
 * to count from, so it renders nothing and the browser fills it in after hydration.
 */
export function Countdown({ dueAt, className }: { dueAt: string; className?: string }) {
  const current = useSyncExternalStore(subscribe, () => now, () => 0);
  if (current === 0) return <span className={className} />;
  return (
    <span className={className} data-testid="countdown">
      {countdown(dueAt, current)}
    </span>
  );
}
