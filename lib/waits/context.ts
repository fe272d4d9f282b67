import type { Step } from "../executor/types";
import { waitLinks } from "./links";

/**
 * `{{run.resume_url}}`, `{{run.approve_url}}`, `{{run.deny_url}}`: the links of the next wait the
 * run reaches (its n-th, n = the waits recorded so far), read lazily so a step before the wait and
 * the wait's own message see the same links.
 */
export function withWaitLinks<T extends object>(run: T, config: { publicUrl: string; sessionSecret: string }, runId: string, steps: () => readonly Step[]): T {
  const links = () => waitLinks(config.publicUrl, config.sessionSecret, runId, steps().filter((s) => s.kind === "wait").length);
  for (const name of ["resume_url", "approve_url", "deny_url"] as const) {
    Object.defineProperty(run, name, { enumerable: true, get: () => links()[name] });
  }
  return run;
}

/** Whether a run's stored steps end at a wait it is parked at (its resume is not a crash's re-run). */
export function isParked(steps: readonly Step[]): boolean {
  const last = steps[steps.length - 1];
  return last?.kind === "wait" && last.status === "running";
}
