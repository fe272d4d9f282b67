import { LocalTime } from "@/components/LocalTime";
import { StatusBadge } from "@/components/StatusBadge";
import { WaitWords } from "@/components/WaitWords";
import type { Step } from "@/lib/executor/types";
import { formatDuration, pretty } from "@/lib/ui/format";
import { journalTree, parkedWaitStatus, stepTitle, type JournalNode } from "@/lib/ui/run-journal";

/**
 * The run's journal as a tree: steps in the order they ran; an if or paths with the branch taken
 * (its steps inside) and the others greyed with why they were not; each for_each collapsible with
 * its counts ("97 succeeded, 3 failed") and its items, an item with a failure open. Old runs (no
 * ids, no places) are the flat list they always were.
 */
export function RunJournal({ steps, runAttempt, runStatus }: { steps: Step[]; runAttempt: number; runStatus?: string }) {
  return <Nodes nodes={journalTree(steps)} runAttempt={runAttempt} runStatus={runStatus} />;
}

function Nodes({ nodes, runAttempt, runStatus }: { nodes: JournalNode[]; runAttempt: number; runStatus?: string }) {
  return (
    <ol className="flex min-w-0 flex-col gap-3">
      {nodes.map((n) => (
        <Node key={n.position} node={n} runAttempt={runAttempt} runStatus={runStatus} />
      ))}
    </ol>
  );
}

function Node({ node, runAttempt, runStatus }: { node: JournalNode; runAttempt: number; runStatus?: string }) {
  const s = node.entry;
  if (node.branches) return <Decision node={node} runAttempt={runAttempt} runStatus={runStatus} />;
  if (node.loop) return <Loop node={node} runAttempt={runAttempt} runStatus={runStatus} />;
  if (s.kind === "stop") {
    return (
      <li className="card" data-testid={`step-${node.position}`}>
        <h3 className="flex flex-wrap items-center gap-2 font-medium">
          <span className="text-slate-400">{node.position}.</span> {stepTitle(s)} <StatusBadge status={s.status} />
        </h3>
        <p className="mt-1 text-sm wrap-anywhere text-slate-700">The run ended here{s.why ? <>: {s.why}</> : "."}</p>
      </li>
    );
  }
  return <StepCard step={s} position={node.position} runAttempt={runAttempt} runStatus={runStatus} />;
}

/** An if or paths: the decision and why, each branch under it (not taken: greyed, with the reason). */
function Decision({ node, runAttempt, runStatus }: { node: JournalNode; runAttempt: number; runStatus?: string }) {
  const s = node.entry;
  return (
    <li className="card" data-testid={`step-${node.position}`}>
      <h3 className="flex flex-wrap items-center gap-2 font-medium">
        <span className="text-slate-400">{node.position}.</span> {stepTitle(s)} <StatusBadge status={s.status} />
        {s.decision ? <span className="text-sm font-normal text-slate-600">→ {s.decision}</span> : null}
      </h3>
      <ul className="mt-3 flex flex-col gap-3">
        {node.branches!.map((b) => (
          <li key={b.name} className={`border-l-2 pl-3 ${b.taken ? "border-indigo-400" : "border-slate-200 text-slate-400"}`} data-testid={`branch-${node.id}-${b.name}`} data-taken={b.taken}>
            <p className="text-sm">
              <span className={`font-semibold ${b.taken ? "text-indigo-800" : ""}`}>{b.name}</span>
              {b.taken ? <span className="ml-2 text-xs text-indigo-700">taken</span> : <span className="ml-2 text-xs">skipped</span>}
            </p>
            {b.why ? <p className={`text-xs wrap-anywhere ${b.taken ? "text-slate-600" : ""}`}>{b.why}</p> : null}
            {b.children.length ? (
              <div className="mt-2">
                <Nodes nodes={b.children} runAttempt={runAttempt} runStatus={runStatus} />
              </div>
            ) : b.taken ? (
              <p className="text-xs text-slate-500">No steps on this branch.</p>
            ) : null}
          </li>
        ))}
      </ul>
    </li>
  );
}

/** A for_each: collapsible, its counts in the summary; each item collapsible too, open when it failed. */
function Loop({ node, runAttempt, runStatus }: { node: JournalNode; runAttempt: number; runStatus?: string }) {
  const s = node.entry;
  const loop = node.loop!;
  const failed = s.status === "failed" || loop.items.some((i) => i.status === "failed");
  return (
    <li className="card" data-testid={`step-${node.position}`}>
      <details open={failed || loop.items.length <= 3}>
        <summary className="cursor-pointer">
          <span className="inline-flex flex-wrap items-center gap-2 font-medium">
            <span className="text-slate-400">{node.position}.</span> {stepTitle(s)} <StatusBadge status={s.status} />
            <span className="text-sm font-normal text-slate-600" data-testid={`loop-${node.id}-summary`}>
              {loop.summary}
            </span>
          </span>
        </summary>
        {s.why ? <p className="mt-1 text-xs wrap-anywhere text-slate-600">{s.why}</p> : null}
        {s.error ? <p className="mt-2 rounded bg-red-50 p-2 font-mono text-xs wrap-anywhere whitespace-pre-wrap text-red-900 ring-1 ring-red-200">{s.error}</p> : null}
        <ol className="mt-3 flex flex-col gap-2">
          {loop.items.map((item) => (
            <li key={item.index} className="border-l-2 border-slate-200 pl-3" data-testid={`item-${node.id}-${item.index}`}>
              <details open={item.status === "failed"}>
                <summary className="cursor-pointer text-sm">
                  Item {item.index} <StatusBadge status={item.status} />
                </summary>
                <div className="mt-2">
                  <Nodes nodes={item.children} runAttempt={runAttempt} runStatus={runStatus} />
                </div>
              </details>
            </li>
          ))}
          {loop.counts.not_run ? <li className="border-l-2 border-slate-200 pl-3 text-sm text-slate-400">{loop.counts.not_run.toLocaleString("en-US")} more not run: past max_items</li> : null}
        </ol>
      </details>
    </li>
  );
}

function StepCard({ step: s, position, runAttempt, runStatus }: { step: Step; position: number; runAttempt: number; runStatus?: string }) {
  const title = stepTitle(s);
  const parked = parkedWaitStatus(s, runStatus);
  return (
    <li className="card" data-testid={`step-${position}`}>
      <div className="flex flex-wrap items-center justify-between gap-2">
        <h3 className="flex items-center gap-2 font-medium">
          <span className="text-slate-400">{position}.</span> {title} <StatusBadge status={parked ?? s.status} testId={`step-${position}-status`} />
        </h3>
        <p className="text-xs text-slate-500">
          {/* A parked wait has no duration yet: it says since when it waits. */}
          {parked ? "since" : <>{formatDuration(s.duration_ms)} · started</>} <LocalTime iso={s.started_at} /> · attempt {s.attempt}
          {s.attempt < runAttempt && s.status === "succeeded" ? " (kept from an earlier attempt)" : ""}
          {s.rerun ? <span className="ml-1 font-medium text-amber-800">· ran again after the worker stopped</span> : null}
        </p>
      </div>
      {s.why ? (
        <p className="mt-1 text-xs wrap-anywhere text-slate-600" data-testid={`step-${position}-why`}>
          {parked === "waiting" ? <span className="font-medium text-violet-900"><WaitWords stored={s.why} kind={s.name} detail={s.output} /></span> : parked === "cancelled" ? <>Cancelled while {s.why}</> : <>{s.decision === "skip" ? "Skipped: " : "Ran: "}{s.why}</>}
        </p>
      ) : null}
      {s.continued ? <p className="mt-1 text-xs text-slate-600">Failed; the run went on (continue on error).</p> : null}
      {s.error ? <p className="mt-2 rounded bg-red-50 p-2 font-mono text-xs wrap-anywhere whitespace-pre-wrap text-red-900 ring-1 ring-red-200">{s.error}</p> : null}
      {s.previous_errors?.length ? (
        <div className="mt-2 text-xs text-slate-700">
          <p className="font-semibold">Earlier attempts</p>
          <ul className="mt-1 list-disc pl-5">
            {s.previous_errors.map((e, i) => (
              <li key={i}>
                attempt {e.attempt}, <LocalTime iso={e.at} />: <span className="font-mono">{e.error}</span>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {s.warnings.length ? (
        <ul className="mt-2 list-disc pl-5 text-xs text-amber-900">
          {s.warnings.map((w, i) => (
            <li key={i}>{w}</li>
          ))}
        </ul>
      ) : null}
      <div className="mt-3 grid gap-3 md:grid-cols-2">
        <div className="min-w-0">
          <p className="text-xs font-semibold text-slate-600">{s.kind === "filter" ? "Code" : `Input (rendered${s.kind === "action" ? ", secrets redacted" : ""})`}</p>
          <pre className="pre mt-1">{s.input === undefined ? "–" : filterCode(s) ?? pretty(s.input)}</pre>
        </div>
        <div className="min-w-0">
          <p className="text-xs font-semibold text-slate-600">Output</p>
          <pre className="pre mt-1" data-testid={`step-${position}-output`}>
            {s.output === undefined ? "–" : pretty(s.output)}
          </pre>
        </div>
      </div>
      {s.logs.length ? (
        <div className="mt-3">
          <p className="text-xs font-semibold text-slate-600">Console ({s.logs.length})</p>
          <pre className="pre mt-1">{s.logs.join("\n")}</pre>
        </div>
      ) : null}
      {s.progress !== undefined ? <p className="mt-2 text-xs text-slate-600">Progress recorded: <span className="font-mono">{JSON.stringify(s.progress)}</span></p> : null}
      {s.truncated ? <p className="mt-2 text-xs text-amber-800">Cut to the 64 KB storage limit.</p> : null}
    </li>
  );
}

/** A filter step's input is its code: shown as code, not as an escaped JSON string. */
function filterCode(s: Step): string | null {
  const input = s.input as { code?: unknown } | null;
  return s.kind === "filter" && input && typeof input.code === "string" ? input.code : null;
}
