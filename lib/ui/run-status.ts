/** Run statuses for the screens (filters, live updates), in a module client components can import. */
export type { RunStatus } from "@/lib/db/store/types/runs";
export { RUN_STATUSES, TERMINAL_STATUSES, shownRunStatus, type ShownRunStatus } from "@/lib/db/store/types/run-status";
