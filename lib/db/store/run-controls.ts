import type { IngestControls } from "./types";

/**
 * Controls over runs in the store (lib/definition/controls.ts says what they mean), shared by both
 * engines: the arithmetic of a rate limit's slots and the texts the run log and the ledger show.
 * Only an applet whose controls are not the default reaches this code (its IngestInput carries
 * `controls`); every other ingest is the one-statement hot path, unchanged.
 */

/** A run's slot under a rate limit, and the slots to keep (see `rateSlot` below). */
export interface RateDecision {
  /** When the run may start (ms). */
  slot: number;
  keep: number[];
}

/**
 * A new run that may start at `earliest` (ms), given the slots handed out (ms, oldest first): no
 * earlier than the `max`-th slot before it plus the period, and never before the last one (the
 * queue stays in order). Only the last `max` slots can bound a later one, so only those are kept.
 */
export function rateSlot(slots: number[], earliest: number, max: number, periodMs: number): RateDecision {
  const last = slots.length ? slots[slots.length - 1]! : Number.NEGATIVE_INFINITY;
  const bound = slots.length >= max ? slots[slots.length - max]! + periodMs : Number.NEGATIVE_INFINITY;
  const slot = Math.max(earliest, bound, last);
  return { slot, keep: [...slots, slot].slice(-max) };
}

/**
 * Whether a run may start at `now` under a rate limit, given when the applet's last runs started
 * (ms, oldest first): yes while fewer than `max` started in the period before now (`keep`: the
 * starts with this one, the last `max`); otherwise not before the `max`-th last start plus the
 * period (`until`). The slots handed out at ingest space the runs when a worker is there to start
 * them on time; this holds the limit when those slots passed while nothing ran (the worker was
 * down, or the lane busy), where every held run would otherwise start at once.
 */
export function admitStart(starts: number[], now: number, max: number, periodMs: number): { admit: true; keep: number[] } | { admit: false; until: number } {
  const recent = starts.filter((s) => s > now - periodMs);
  if (recent.length < max) return { admit: true, keep: [...recent, now].slice(-max) };
  return { admit: false, until: recent[recent.length - max]! + periodMs };
}

/** A hold at the start shorter than this (a run a moment late) is not written to the ledger: it is the limit doing its work, not news. */
export const HELD_AGAIN_NOTED_MS = 2_000;

/** The ledger's detail for a run the rate limit held again at its start. */
export const heldAgainDetail = (rate: NonNullable<IngestControls["rate"]>, until: string, moved: number): string =>
  `held again by the rate limit (${rate.max} per ${period(rate.periodMs)}): its start time passed while no run started (the worker was down or busy); starts at ${until}` +
  (moved > 0 ? `, with ${moved} more run${moved === 1 ? "" : "s"} of this applet moved no earlier` : "");

/** The stored slots (a JSON array of ISO times) as ms; anything unreadable counts as none. */
export function readSlots(text: string | null | undefined): number[] {
  try {
    const v = JSON.parse(text ?? "[]") as unknown;
    return Array.isArray(v) ? v.map((s) => Date.parse(String(s))).filter((n) => Number.isFinite(n)) : [];
  } catch {
    return [];
  }
}

export const writeSlots = (slots: number[]): string => JSON.stringify(slots.map((s) => new Date(s).toISOString()));

const period = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);

/** The error of a run a rate limit dropped (a skipped run; the ledger reads it as rate_limited). */
export const droppedReason = (rate: NonNullable<IngestControls["rate"]>): string =>
  `skipped: rate limit (${rate.max} per ${period(rate.periodMs)} reached; dropped)`;

/** The ledger's detail for a run a rate limit holds back. */
export const heldDetail = (rate: NonNullable<IngestControls["rate"]>, until: string): string =>
  `held by a rate limit (${rate.max} per ${period(rate.periodMs)}): starts at ${until}`;

/** The ledger's detail for an event a debounce merged into an open run. */
export const mergedDetail = (until: string): string => `merged by debounce into the run that starts at ${until}`;

/** What a run keeps besides its own event: at most this many merged events are read back. */
export const MAX_MERGED_EVENTS = 10_000;
