/** Controls over runs (debounce, merge, admission). */
import type { ClaimedRun, IngestControls } from "./runs-store";

/** One event of a debounced run (its own first, then those merged into it, oldest first). */
export interface MergedEvent {
  id: string;
  receivedAt: string;
  payload: Record<string, unknown>;
}

/**
 * Controls over runs (lib/definition/controls.ts). Their ingest goes through `runs.ingest` (an
 * input with `controls`); this is what the executor reads back.
 */
export interface RunControlsStore {
  /** A debounced run's events, oldest first: its own, then those merged into it (at most 10,000). */
  mergedEvents(runId: string): Promise<MergedEvent[]>;
  /**
   * A claimed run of an applet with a rate limit, before it starts (../run-controls `admitStart`),
   * in one transaction that the applet's starts take in turn: `admitted` (its start recorded), or
   * `held`: back to queued until the limit allows it, with the applet's other queued runs due
   * earlier moved to that time too (they would be held the same way), and a ledger row when the
   * hold is not a moment's. `lost`: the claim was lost meanwhile (nothing changed).
   */
  admitStart(run: Pick<ClaimedRun, "id" | "appletId" | "claimToken">, rate: NonNullable<IngestControls["rate"]>, now: Date): Promise<"admitted" | "held" | "lost">;
}
