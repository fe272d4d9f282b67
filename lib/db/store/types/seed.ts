/** What seeds and tests write that the app never does. */
import type { RunStatus, Step } from "./runs";

/** The state a seeded run is put in after `runs.ingest` created it queued (scripts/seed.ts only). */
export interface SeedRunState {
  status: RunStatus;
  attempt: number;
  maxAttempts: number;
  nextAttemptAt: string | null;
  lockedBy: string | null;
  lockedAt: string | null;
  claimToken: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  steps: Step[];
  updatedAt: string;
}

/** Writes only scripts/seed.ts needs (demo runs in every state); kept apart so the queue's fenced settles stay the only way the app changes a run. */
export interface SeedStore {
  /** Overwrites the run's state; false: no such run. */
  setRunState(runId: string, s: SeedRunState): Promise<boolean>;
  /** Recomputes run_count (finished runs) and last_fired_at (latest finished_at) from the runs. */
  recountApplet(appletId: string): Promise<void>;
}
