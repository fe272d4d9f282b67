import type { WaitStep } from "../../definition/types";
import { renderTemplate } from "../../template";
import { waitLinks } from "../../waits/links";
import { sentLinks } from "../../waits/sent";
import type { StepBase } from "../step";
import type { Step } from "../types";
import { planWait, resolvedWhy, waitOutput } from "../wait";
import { inBranch, iterationWords, placed, type End, type Scope, type Walk } from "./types";

/**
 * A wait: parks the run (lib/executor/wait.ts) until its time, a call or an approval; once
 * resolved, a retry follows what it decided (on_timeout, on_deny).
 */
export async function waitStep(w: Walk, step: WaitStep, scope: Scope): Promise<End | null> {
  const { runner, redactor, timezone, run, app } = w.deps;
  const { clock } = app;
  const base: StepBase = { id: step.id, kind: "wait", name: step.kind, ...placed(scope) };
  // The run's n-th wait: its links ({{run.resume_url}} …) name it.
  const seq = runner.steps.filter((s) => s.kind === "wait").length;
  const where = `wait ${step.id}${iterationWords(scope)}`;
  const earlier = runner.earlier(base);
  let entry: Step;
  if (earlier?.status === "succeeded" && earlier.decision && earlier.decision !== "waiting") {
    // Resolved in an earlier attempt: a retry follows what it decided.
    entry = runner.record(earlier);
  } else {
    const stored = w.deps.waitOf ? await w.deps.waitOf(seq) : null;
    if (stored?.resolution) {
      const started = earlier?.started_at ?? clock.now().toISOString();
      entry = runner.record(
        w.blank(base, scope, {
          input: earlier?.input,
          decision: stored.resolution,
          why: resolvedWhy(stored),
          output: waitOutput(stored),
          started_at: started,
          duration_ms: Math.max(0, clock.now().getTime() - Date.parse(started)),
        }),
      );
    } else {
      const ctx = scope.ctx;
      const render = (t: string | undefined) => {
        if (t === undefined) return null;
        const r = renderTemplate(t, ctx, { timezone });
        redactor.add(r.secretsUsed);
        return r.value;
      };
      // Where the steps before it sent this wait's links: the run log says "sent to … at …".
      const sent = sentLinks(runner.steps, waitLinks(app.config.publicUrl, app.config.sessionSecret, run.id, seq).resume_url);
      const plan = planWait(step, { now: clock.now(), seq, renderedAt: step.kind === "until" ? render(step.at) : null, message: step.kind === "for_approval" ? render(step.message) : null, timezone, sent });
      if (plan.kind === "problem") {
        w.noted(scope, step.id, runner.record(w.blank(base, scope, { status: "failed", error: plan.problem, input: plan.input })));
        return { kind: "finish", status: "failed", reason: `${where}: ${plan.problem}` };
      }
      if (plan.kind === "past") {
        entry = runner.record(w.blank(base, scope, { decision: plan.skipRest ? "skip_rest" : "past", why: plan.why, input: plan.input, output: { resolution: "past" } }));
        w.noted(scope, step.id, entry);
        return plan.skipRest ? { kind: "finish", status: "skipped", reason: `${where}: ${plan.why}` } : null;
      }
      if (!w.deps.dryRun) {
        runner.record(w.blank(base, scope, { status: "running", decision: "waiting", why: plan.why, input: plan.input, output: { seq, ...plan.wait.detail }, ...(earlier?.started_at ? { started_at: earlier.started_at } : {}) }));
        return { kind: "wait", wait: plan.wait };
      }
      // A dry run shows the wait and goes on as if it ended well (time came, call arrived, approved).
      entry = runner.record(w.blank(base, scope, { decision: "dry_run", why: `${plan.why} — a dry run does not wait: the steps after it run now`, input: plan.input, output: { seq, ...plan.wait.detail } }));
    }
  }
  w.noted(scope, step.id, entry);
  if (entry.decision === "timeout") {
    if (!step.on_timeout) return { kind: "finish", status: "failed", reason: `${where} timed out (${step.timeout}) ${entry.why ? `— ${entry.why}` : ""}`.trim() };
    const end = await w.list(step.on_timeout, inBranch(scope, `${step.id}:on_timeout`));
    return end ?? { kind: "finish", status: "succeeded", reason: `${where} timed out; its on_timeout steps ran` };
  }
  if (entry.decision === "denied") {
    const onDeny = step.kind === "for_approval" ? step.on_deny : undefined;
    if (!onDeny) return { kind: "finish", status: "skipped", reason: `${where}: ${entry.why ?? "denied"}` };
    const end = await w.list(onDeny, inBranch(scope, `${step.id}:on_deny`));
    return end ?? { kind: "finish", status: "succeeded", reason: `${where}: ${entry.why ?? "denied"}; its on_deny steps ran` };
  }
  if (entry.decision === "cancelled") return { kind: "finish", status: "skipped", reason: `${where}: the wait was cancelled` };
  return null;
}
