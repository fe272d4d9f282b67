import { durationMs } from "./duration";
import { readInstant } from "./time";
import type { ActionOutcome, ClaimedRun, Guard, Rule, SweepOptions, SweepReport } from "./types";

export const DEFAULT_SWEEP_LIMIT = 25;

/** Throw this (or any error with `retryable: false`) from an action to fail the run without retries. */
export class PermanentActionError extends Error {
  readonly retryable = false;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentActionError";
  }
}

/** Throw this from an action to be retried no sooner than `retryAfterMs` (up to a day). */
export class RetryableActionError extends Error {
  readonly retryable = true;
  constructor(message: string, readonly retryAfterMs?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "RetryableActionError";
  }
}

function field(error: unknown, key: string): unknown {
  return error !== null && typeof error === "object" ? (error as Record<string, unknown>)[key] : undefined;
}

/**
 * A guard that skips a run as `stale` when what it was planned around has moved: `current` reads
 * the anchor as it is now, at once or as a promise (epoch ms, ISO text with a zone, a Date) or null when the subject is
 * gone or cancelled. Runs anchored on the event itself have nothing to compare and pass.
 */
export function anchorUnchanged(current: (run: ClaimedRun) => unknown): Guard {
  return async (run) => {
    if (run.anchorAt === null) return undefined;
    const value = await current(run);
    if (value === null || value === undefined) return "stale";
    const at = readInstant(value);
    return at === run.anchorAt ? undefined : "stale";
  };
}

function isSkip(outcome: ActionOutcome): outcome is { skip: string } {
  return outcome !== null && typeof outcome === "object" && typeof (outcome as { skip?: unknown }).skip === "string";
}

function isDefer(outcome: ActionOutcome): outcome is { defer: number } {
  return outcome !== null && typeof outcome === "object" && typeof (outcome as { defer?: unknown }).defer === "number";
}

/**
 * One sweep: claims due runs and, in order of due time, checks each against the world as it is
 * now (lateness, the rule exists and is enabled, the frequency cap, the guards), runs its action
 * and settles it. Every settle is conditional on the claim token, so a run another sweep took
 * over is counted as lost and changes nothing.
 */
export async function sweepDue(options: SweepOptions): Promise<SweepReport> {
  const clock = options.clock ?? Date.now;
  const started = clock();
  const now0 = options.now ?? started;
  // The sweep's own `now` may be given explicitly; the clock only measures how much time passed.
  const nowNow = () => now0 + (clock() - started);
  const { scheduler } = options;
  const report: SweepReport = { claimed: 0, done: 0, skipped: 0, failed: 0, retried: 0, deferred: 0, lost: 0 };

  const claimed = await scheduler.claimDue(now0, options.limit ?? DEFAULT_SWEEP_LIMIT);
  report.claimed = claimed.length;
  claimed.sort((a, b) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const rules = new Map<string, Promise<Rule | null>>();
  const loadRule = (id: string) => {
    let rule = rules.get(id);
    if (!rule) {
      rule = Promise.resolve(options.loadRule(id));
      rules.set(id, rule);
    }
    return rule;
  };

  const settled = (ok: boolean, counter: keyof SweepReport) => {
    report[ok ? counter : "lost"] += 1;
  };

  for (const run of claimed) {
    const now = nowNow();
    if (now >= run.leaseUntil) {
      // Its lease ran out while this sweep was busy with the runs before it; another sweep may
      // already hold it, and starting it here could send it twice.
      report.lost += 1;
      continue;
    }
    const skip = async (reason: string) => settled(await scheduler.skip(run, now, reason), "skipped");
    try {
      if (run.expiresAt !== null && now > run.expiresAt) {
        await skip("late");
        continue;
      }
      const rule = await loadRule(run.ruleId);
      if (!rule || !rule.enabled) {
        await skip("rule_disabled");
        continue;
      }
      if (rule.frequencyCap && run.contactId !== null) {
        const sent = await scheduler.countRecent({
          ruleId: run.ruleId,
          contactId: run.contactId,
          since: now - durationMs(rule.frequencyCap.per),
          inFlightBefore: { dueAt: run.dueAt, id: run.id, now },
        });
        if (sent >= rule.frequencyCap.max) {
          await skip("frequency_cap");
          continue;
        }
      }
      let objection: string | null = null;
      for (const guard of options.guards ?? []) {
        const reason = await guard(run, { now, rule });
        if (typeof reason === "string" && reason !== "") {
          objection = reason;
          break;
        }
      }
      if (objection) {
        await skip(objection);
        continue;
      }
      const action = options.actions[run.action];
      if (!action) {
        settled(await scheduler.fail(run, nowNow(), new Error(`@vibedout/automations: no action registered as "${run.action}"`)), "failed");
        continue;
      }
      const outcome = await action(run, { now, attempt: run.attempts });
      const after = nowNow();
      if (isSkip(outcome)) settled(await scheduler.skip(run, after, outcome.skip), "skipped");
      else if (isDefer(outcome)) settled(await scheduler.defer(run, after, outcome.defer), "deferred");
      else settled(await scheduler.complete(run, after, outcome && typeof outcome.messageId === "string" ? { messageId: outcome.messageId } : {}), "done");
    } catch (error) {
      const after = nowNow();
      if (field(error, "retryable") === false) {
        settled(await scheduler.fail(run, after, error), "failed");
        continue;
      }
      const retryAfterMs = field(error, "retryAfterMs");
      const outcome = await scheduler.retry(run, after, { error, ...(typeof retryAfterMs === "number" ? { retryAfterMs } : {}) });
      if (outcome === "retry") report.retried += 1;
      else if (outcome === "failed") report.failed += 1;
      else report.lost += 1;
    }
  }
  return report;
}
