import type { App } from "../app";
import { errorMessage } from "../core/errors";
import type { LedgerOutcome } from "../db/store/types";

/**
 * A fire to a disabled applet as the ledger says it: `paused`, with its reason, when auto-pause
 * disabled it; `disabled` with `detail` otherwise. Shared by requests (counted below), emails and
 * schedule slots, so every way in says it the same.
 */
export function disabledOutcome(pausedReason: string | null | undefined, detail: string): { outcome: Extract<LedgerOutcome, "paused" | "disabled">; detail: string } {
  return pausedReason ? { outcome: "paused", detail: `the applet is paused (${pausedReason}); nothing ran` } : { outcome: "disabled", detail };
}

/** The ledger's counted row for one minute: its start, and the bucket rows of the same reason add to. */
export function minuteBucket(outcome: LedgerOutcome, detail: string, at: Date): { at: string; bucket: string } {
  const minute = `${at.toISOString().slice(0, 16)}:00.000Z`;
  return { at: minute, bucket: `${outcome}:${minute}:${detail.slice(0, 120)}` };
}

/** How long counted fires wait in memory before their rows are written (one write per applet, reason and minute). */
export const LEDGER_COUNT_FLUSH_MS = 5_000;
const MAX_KEYS = 10_000;

type Counted = Extract<LedgerOutcome, "refused" | "disabled">;

/**
 * Refused requests (a bad signature, a body too large) and requests to a disabled applet are
 * counted, not stored one by one: a flood of forged requests must cost memory increments, not a
 * write each. Every LEDGER_COUNT_FLUSH_MS the counts go to the ledger as one row per applet, reason
 * and minute (`fires.count` adds to a row already there). A disabled applet that auto-pause
 * disabled is written as `paused`, with its reason, read once per flush.
 */
export function createLedgerCounter(app: Pick<App, "store" | "clock" | "log">, opts: { flushMs?: number } = {}) {
  const flushMs = opts.flushMs ?? LEDGER_COUNT_FLUSH_MS;
  const pending = new Map<string, { appletId: string; outcome: Counted; detail: string; minute: string; count: number }>();
  let timer: NodeJS.Timeout | null = null;
  let dropped = 0;

  async function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    const batch = [...pending.values()];
    pending.clear();
    const now = app.clock.now().toISOString();
    const paused = new Map<string, string | null>();
    for (const c of batch) {
      try {
        let outcome: LedgerOutcome = c.outcome;
        let detail = c.detail;
        if (c.outcome === "disabled") {
          if (!paused.has(c.appletId)) paused.set(c.appletId, (await app.store.applets.get(c.appletId))?.pausedReason ?? null);
          ({ outcome, detail } = disabledOutcome(paused.get(c.appletId), c.detail));
        }
        await app.store.fires.count({ appletId: c.appletId, outcome, detail, ...minuteBucket(outcome, detail, new Date(c.minute)), count: c.count }, now);
      } catch (err) {
        app.log.child("ledger").warn("could not count fires in the ledger", { applet_id: c.appletId, outcome: c.outcome, count: c.count, error: errorMessage(err) });
      }
    }
    if (dropped) {
      app.log.child("ledger").warn("fires not counted in the ledger: too many applets and reasons at once", { dropped });
      dropped = 0;
    }
  }

  return {
    /** Counts one fire; written within `flushMs`. */
    note(appletId: string, outcome: Counted, detail: string): void {
      const minute = `${app.clock.now().toISOString().slice(0, 16)}:00.000Z`;
      const key = `${appletId}\n${outcome}\n${minute}\n${detail}`;
      const seen = pending.get(key);
      if (seen) seen.count++;
      else if (pending.size >= MAX_KEYS) dropped++;
      else pending.set(key, { appletId, outcome, detail, minute, count: 1 });
      if (!timer) {
        timer = setTimeout(() => void flush(), flushMs);
        timer.unref();
      }
    },
    /** Writes what is counted now (tests; a clean stop). */
    flush,
  };
}
