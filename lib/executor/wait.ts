import { untilMs, untilProblem, waitDurationMs } from "../definition/steps";
import type { WaitStep } from "../definition/types";
import type { StoredWait, WaitInsert } from "../db/store/types";
import { localIso } from "../core/local-iso";
import type { SentLinks } from "../waits/sent";
import { waitSummary } from "../waits/words";

export { waitSummary };

const at = (d: Date, zone: string): string => localIso(d, zone).slice(0, 16).replace("T", " ");

/**
 * A wait step, worked out at the moment the run reaches it (pure: the rendered `at` and the time
 * are passed in). `wait`: the run parks until `resumeAt` (its time or its timeout, the earlier) or
 * a call / decision; `past`: an `until` whose time has gone by; `problem`: an `until` that did not
 * render a time, named with what it rendered.
 */
export type WaitPlan =
  | { kind: "wait"; wait: WaitInsert; why: string; input: Record<string, unknown> }
  | { kind: "past"; why: string; skipRest: boolean; input: Record<string, unknown> }
  | { kind: "problem"; problem: string; input: Record<string, unknown> };

export function planWait(
  step: WaitStep,
  opts: { now: Date; seq: number; renderedAt: string | null; message: string | null; timezone: string; /** Where earlier steps sent this wait's links (lib/waits/sent.ts). */ sent?: SentLinks[] },
): WaitPlan {
  const { now, seq, timezone } = opts;
  const timeoutMs = step.timeout ? waitDurationMs(step.timeout) : null;
  const timeoutAt = timeoutMs !== null ? new Date(now.getTime() + timeoutMs) : null;
  const input: Record<string, unknown> = { kind: step.kind, ...(step.timeout ? { timeout: step.timeout } : {}) };
  let target: Date | null = null;
  if (step.kind === "delay") {
    input.duration = step.duration;
    target = new Date(now.getTime() + (waitDurationMs(step.duration) ?? 0));
  } else if (step.kind === "until") {
    const rendered = opts.renderedAt ?? "";
    input.at = step.at;
    input.rendered = rendered;
    const problem = untilProblem(rendered);
    if (problem) return { kind: "problem", problem: `until did not render a time: ${problem}`, input };
    target = new Date(untilMs(rendered));
    if (target.getTime() <= now.getTime()) {
      const skipRest = step.if_past === "skip_rest";
      return { kind: "past", skipRest, input, why: `${at(target, timezone)} had already passed → ${skipRest ? "the rest of the run is skipped" : "carried on at once"}` };
    }
  }
  const byTimeout = timeoutAt !== null && (target === null || timeoutAt.getTime() < target.getTime());
  const resumeAt = byTimeout ? timeoutAt : target;
  const detail: Record<string, unknown> = {
    ...(target ? { until: target.toISOString() } : {}),
    ...(timeoutAt ? { timeout_at: timeoutAt.toISOString() } : {}),
    ...(step.kind === "delay" ? { duration: step.duration } : {}),
    ...(opts.message !== null ? { message: opts.message } : {}),
    ...(opts.sent?.length ? { sent: opts.sent } : {}),
    timezone,
  };
  const summary = waitSummary({ kind: step.kind, detail, timeoutAt: timeoutAt?.toISOString() ?? null }, now);
  const wait: WaitInsert = { seq, stepId: step.id, kind: step.kind, resumeAt, resumeAs: resumeAt ? (byTimeout ? "timeout" : "time") : null, timeoutAt, detail, summary };
  return { kind: "wait", wait, input, why: summary };
}

/** The step's output once its wait ended: a call's body as it came; otherwise what ended it, when and by whom. */
export function waitOutput(w: StoredWait): unknown {
  if (w.resolution === "called") return w.output;
  return { resolution: w.resolution, at: w.resolvedAt, by: w.resolvedBy };
}

/** Why, in the run log's words. */
export function resolvedWhy(w: StoredWait): string {
  const when = w.resolvedAt ?? "";
  switch (w.resolution) {
    case "time":
      return `the time came (${when})`;
    case "timeout":
      return `timed out at ${when}`;
    case "called":
      return `resumed by a call from ${w.resolvedBy ?? "?"} at ${when}`;
    case "approved":
      return `approved from ${w.resolvedBy ?? "?"} at ${when}`;
    case "denied":
      return `denied from ${w.resolvedBy ?? "?"} at ${when}`;
    case "resumed":
      return `resumed now from the run log by ${w.resolvedBy ?? "?"} at ${when}`;
    default:
      return `${w.resolution ?? "pending"} at ${when}`;
  }
}
