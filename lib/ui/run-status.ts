import type { RunStatus } from "@/lib/executor/types";

/** Run statuses for the screens (filters, live updates), in a module client components can import. */
export type { RunStatus };
export const TERMINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "skipped", "dead"];
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "running", "succeeded", "failed", "skipped", "dead"];
