import type { RunStatus } from "./runs";

/** A run's statuses as the screens and the API name them; pure, so client components import it too (lib/ui/run-status.ts). */
/** `cancelled`: a timed run a newer version of its record replaced; it never runs. */
export const TERMINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "skipped", "dead", "cancelled"];
/**
 * A run's status as every screen and the API show it. `retrying` is a queued run whose earlier
 * attempt failed and whose next attempt waits (stored as `queued` with attempt > 1, which the
 * queue claims like any other): shown as `queued` it would look healthy, simply next in line.
 */
export type ShownRunStatus = RunStatus | "retrying";

export function shownRunStatus(run: { status: string; attempt: number }): ShownRunStatus {
  return run.status === "queued" && run.attempt > 1 ? "retrying" : (run.status as RunStatus);
}

/** `planned`: a timed run waiting for its due time. */
export const RUN_STATUSES: readonly ShownRunStatus[] = ["planned", "waiting", "queued", "retrying", "running", "succeeded", "failed", "skipped", "cancelled", "dead"];
