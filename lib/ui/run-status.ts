import type { RunStatus } from "@/lib/executor/types";

/** Run statuses for the screens (filters, live updates), in a module client components can import. */
export type { RunStatus };
/** `cancelled`: a timed run a newer version of its record replaced (#17); it never runs. */
export const TERMINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "skipped", "dead", "cancelled"];
/** `planned`: a timed run waiting for its due time (#17). */
export const RUN_STATUSES: readonly RunStatus[] = ["planned", "queued", "running", "succeeded", "failed", "skipped", "cancelled", "dead"];
