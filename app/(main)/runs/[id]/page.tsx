import { Breadcrumb } from "@/components/Breadcrumb";
import Link from "next/link";
import { notFound } from "next/navigation";
import { LocalTime } from "@/components/LocalTime";
import { RunActions } from "@/components/RunActions";
import { RetryFromStep } from "@/components/RetryFromStep";
import { stepIdOf, type Step } from "@/lib/executor/types";
import { ReplayLinks } from "@/components/ReplayLinks";
import { RunLive } from "@/components/RunLive";
import { RunJournal } from "@/components/RunJournal";
import { RunStatusBadge } from "@/components/RunStatusBadge";
import { WaitingRun } from "@/components/WaitingRun";
import { reranAfterCrash, runSpan } from "@/lib/ui/run-timing";
import { formatDuration, pretty, shortId } from "@/lib/ui/format";
import { isTimedRun, reasonSentence, subjectWords, timedInfoOf, type TimedRunInfo } from "@/lib/ui/planned";
import { Countdown } from "@/components/Countdown";
import { appletDetail, plannedRunNote, REPLAYS_SHOWN, runDetail } from "@/lib/api/queries";
import { actionRegistry } from "@/lib/actions";
import { timedAction } from "@/lib/definition";
import { services } from "@/lib/services";

export const dynamic = "force-dynamic";
export const metadata = { title: "Run · whenthen" };

export default async function RunPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const detail = await runDetail(services().app, id);
  if (!detail) notFound();
  const { run, event, applet } = detail;
  const span = runSpan(run);
  const timed = timedInfoOf(run);
  // A timed run still waiting, cancelled, or skipped at its due time has no attempt to describe.
  const neverRan = isTimedRun(timed) && run.started_at === null && (run.status === "planned" || run.status === "cancelled" || run.status === "skipped");
  const plan = run.plannedRunId ? await plannedRunNote(services().app, run.plannedRunId) : null;
  const actionName = run.actionIndex !== null ? await actionNameOf(run.applet_id, run.actionIndex) : "–";

  return (
    <div className="mx-auto max-w-5xl">
      <Breadcrumb href="/runs" label="Runs">
        {applet ? (
          <Link href={`/applets/${applet.id}`} className="hover:underline">
            {applet.name}
          </Link>
        ) : (
          "deleted applet"
        )}
      </Breadcrumb>
      <header className="mb-4 flex flex-wrap items-start justify-between gap-3">
        <div>
          <h1 className="flex items-center gap-3 text-xl font-semibold">
            Run <span className="font-mono text-base text-slate-500" title={run.id}>{shortId(run.id)}</span>
            <RunStatusBadge run={run} testId="run-status" />
          </h1>
          <div className="mt-1">
            <RunLive runId={run.id} status={run.status} />
          </div>
        </div>
        <div className="flex flex-col items-start gap-2">
          <RunActions runId={run.id} canRetry={run.status === "failed" || run.status === "dead"} />
          {run.status === "failed" || run.status === "dead" ? (
            <RetryFromStep runId={run.id} steps={[...new Set(run.steps.map(stepIdOf))]} failed={failedStepOf(run.steps)} />
          ) : null}
        </div>
      </header>

      <RunFacts detail={detail} timed={timed} span={span} neverRan={neverRan} actionName={actionName} />

      {run.status === "waiting" ? <WaitingRun runId={run.id} strictOrder={applet?.strict_order ?? null} {...waitingOf(run.steps, run.error)} /> : null}
      <ReplayLinks replayOf={detail.replay_of} replays={detail.replays} shownMax={REPLAYS_SHOWN} />
      {isTimedRun(timed) ? <TimedOutcome status={run.status} timed={timed} plan={plan} /> : null}
      <RunOutcome status={run.status} error={run.error} timed={timed} />
      {reranAfterCrash(run.steps) ? (
        <p className="mb-4 rounded-md bg-amber-50 p-3 text-sm text-amber-900 ring-1 ring-amber-200" data-testid="rerun-banner">
          The worker stopped while a step of this run was in flight; the run resumed after the steps that had succeeded, so the step marked &quot;ran again&quot; may have run twice.
        </p>
      ) : null}

      <section className="mb-6">
        <h2 className="mb-2 text-base font-semibold">Event payload</h2>
        {event ? (
          <>
            <p className="mb-1 text-xs text-slate-500">
              Received <LocalTime iso={event.received_at} /> · event <span className="font-mono">{event.id}</span>
            </p>
            <pre className="pre" data-testid="event-payload">
              {pretty(event.payload)}
            </pre>
          </>
        ) : (
          <p className="text-sm text-slate-600">The event was deleted by retention.</p>
        )}
      </section>

      <section>
        <h2 className="mb-2 text-base font-semibold">Steps</h2>
        {run.steps.length === 0 ? (
          <p className="card text-sm text-slate-600">{run.status === "planned" ? "Nothing has run yet: the run waits for its due time." : run.status === "cancelled" ? "Nothing ran: the run was cancelled before its due time." : run.status === "skipped" && timed.reason ? "Nothing ran: the timed run was skipped." : run.status === "queued" || run.status === "retrying" ? "Waiting for the worker to pick this run up." : run.status === "running" ? "Running: the first step has not finished yet." : "No steps were recorded."}</p>
        ) : (
          <RunJournal steps={run.steps} runAttempt={run.attempt} runStatus={run.status} />
        )}
      </section>
    </div>
  );
}

type RunDetail = NonNullable<Awaited<ReturnType<typeof runDetail>>>;

/** When the run was made, started and finished, its attempts, version and event. */
function RunFacts({ detail, timed, span, neverRan, actionName }: { detail: RunDetail; timed: TimedRunInfo; span: ReturnType<typeof runSpan>; neverRan: boolean; actionName: string }) {
  const { run, event, applet } = detail;
  return (
    <dl className="card mb-4 grid grid-cols-2 gap-x-6 gap-y-2 text-sm md:grid-cols-4">
      <Meta label={isTimedRun(timed) ? "Planned" : "Created"}>
        <LocalTime iso={run.created_at} />
      </Meta>
      {timed.dueAt ? (
        <Meta label="Due">
          <span data-testid="run-due">
            <LocalTime iso={timed.dueAt} />
          </span>
        </Meta>
      ) : null}
      {neverRan ? (
        // A timed run that was planned and never started: when it was settled, and which action.
        <>
          <Meta label={run.status === "cancelled" ? "Cancelled" : run.status === "skipped" ? "Skipped" : "Action"}>{run.status === "planned" ? actionName : <LocalTime iso={run.finished_at} />}</Meta>
          {run.status !== "planned" ? <Meta label="Action">{actionName}</Meta> : null}
        </>
      ) : (
        <>
          <Meta label={run.attempt > 1 ? "First attempt started" : "Started"}>
            <span data-testid="run-started">
              <LocalTime iso={span.firstStart} />
            </span>
          </Meta>
          <Meta label="Finished">
            <LocalTime iso={run.finished_at} />
          </Meta>
          <Meta label={run.attempt > 1 ? "Duration, all attempts" : "Duration"}>
            <span data-testid="run-duration">{formatDuration(span.totalMs)}</span>
            {run.attempt > 1 && span.lastAttemptMs !== null ? <span className="block text-xs text-slate-500">last attempt {formatDuration(span.lastAttemptMs)}</span> : null}
          </Meta>
          <Meta label="Attempt">
            {/* A retrying run's attempt is the one waiting to start: it has not run yet. */}
            <span data-testid="run-attempt">
              {run.attempt} of {run.max_attempts}
              {run.status === "retrying" ? ", pending" : ""}
            </span>
          </Meta>
          <Meta label="Next attempt">{(run.status === "queued" || run.status === "retrying") && run.next_attempt_at ? <LocalTime iso={run.next_attempt_at} relative /> : "–"}</Meta>
        </>
      )}
      <Meta label="Applet version">
        {run.applet_version !== null && applet ? (
          <Link href={`/applets/${applet.id}?version=${run.applet_version}#history`} className="text-indigo-700 hover:underline" data-testid="run-version">
            version {run.applet_version}
          </Link>
        ) : run.status === "queued" || run.status === "retrying" || run.status === "planned" ? (
          <span className="text-slate-600">the one current when it starts</span>
        ) : (
          // Runs from before version history (or of a deleted applet) never recorded one.
          "–"
        )}
      </Meta>
      <Meta label="Event source">{event?.source ?? "–"}</Meta>
      <Meta label="Dedupe key">
        <span className="break-all">{event?.dedupe_key ?? "–"}</span>
      </Meta>
      {typeof event?.payload.late_by_seconds === "number" ? (
        <Meta label="Fired after its time">
          <span data-testid="schedule-lateness">{event.payload.late_by_seconds < 1 ? "on time" : formatDuration(event.payload.late_by_seconds * 1000)}</span>
        </Meta>
      ) : null}
    </dl>
  );
}

/**
 * The run's `error` column holds three different things: a filter's reason on a skipped run (not a
 * failure), the last attempt's error on a run waiting for its retry, and the final error of a
 * failed or dead run. Only the last is shown as an error.
 */
function RunOutcome({ status, error, timed }: { status: string; error: string | null; timed: TimedRunInfo }) {
  // A waiting run's reason is what it waits for, said by WaitingRun.
  if (!error || status === "waiting") return null;
  // A timed run's skip is said by TimedOutcome, with its reason in words.
  if (status === "skipped" && timed.reason) return null;
  // A stop step ended the run (succeeded or skipped) with its reason: nothing went wrong.
  if ((status === "succeeded" || status === "skipped") && error.startsWith("stopped at ")) {
    return (
      <div className="mb-4 rounded-md bg-slate-100 p-3 text-sm text-slate-800 ring-1 ring-slate-200" data-testid="run-stopped">
        <p className="wrap-anywhere">
          <span className="font-semibold">Stopped{status === "skipped" ? " (skipped)" : ""}:</span> {error.slice("stopped at ".length)}
        </p>
        <p className="mt-1 text-xs text-slate-600">A stop step ended the run here. Nothing went wrong.</p>
      </div>
    );
  }
  if (status === "skipped") {
    const reason = error.startsWith("skipped: ") ? error.slice("skipped: ".length) : null;
    return (
      <div className="mb-4 rounded-md bg-slate-100 p-3 text-sm text-slate-800 ring-1 ring-slate-200" data-testid="run-skipped">
        <p className="wrap-anywhere">{reason ? <><span className="font-semibold">Skipped:</span> {reason}</> : <span className="font-semibold">Skipped by the filter code (it gave no reason).</span>}</p>
        <p className="mt-1 text-xs text-slate-600">The filter code decided this event needs no action. Nothing went wrong.</p>
      </div>
    );
  }
  // A wait that ended the run on a path of its own (timed out, denied), or a waiting run cancelled: nothing failed.
  if (status === "succeeded" || status === "cancelled") {
    return (
      <div className="mb-4 rounded-md bg-slate-100 p-3 text-sm text-slate-800 ring-1 ring-slate-200" data-testid="run-ended">
        <p className="wrap-anywhere">
          <span className="font-semibold">{status === "cancelled" ? "Cancelled:" : "Ended:"}</span> {error}
        </p>
      </div>
    );
  }
  if (status === "failed" || status === "dead") {
    return (
      <div className="mb-4 rounded-md bg-red-50 p-3 text-sm text-red-900 ring-1 ring-red-200" data-testid="run-error">
        <p className="font-semibold">{status === "dead" ? "Error (no attempts left)" : "Error"}</p>
        <p className="mt-1 font-mono text-xs wrap-anywhere whitespace-pre-wrap">{error}</p>
      </div>
    );
  }
  return (
    <div className="mb-4 rounded-md bg-amber-50 p-3 text-sm text-amber-900 ring-1 ring-amber-200" data-testid="run-last-error">
      <p className="font-semibold">The last attempt failed{status === "retrying" ? "; it will be retried" : ""}</p>
      <p className="mt-1 font-mono text-xs wrap-anywhere whitespace-pre-wrap">{error}</p>
    </div>
  );
}

/**
 * A timed run: while planned, when it will run and a countdown; once cancelled or skipped,
 * why, in the words lib/timed/reasons.ts gives every screen.
 */
function TimedOutcome({ status, timed, plan }: { status: string; timed: TimedRunInfo; plan: { explanation: string; subjectId: string; subjectVersion: number } | null }) {
  const record = plan ? subjectWords(plan.subjectId, plan.subjectVersion) : null;
  const sentence = reasonSentence(status, timed.reason);
  if (status === "planned") {
    return (
      <div className="mb-4 rounded-md bg-indigo-50 p-3 text-sm text-indigo-900 ring-1 ring-indigo-200" data-testid="run-timed">
        <p className="wrap-anywhere">
          <span className="font-semibold">Planned:</span> runs at <LocalTime iso={timed.dueAt} /> {timed.dueAt ? <Countdown dueAt={timed.dueAt} className="font-medium tabular-nums" /> : null}
        </p>
        {plan?.explanation ? <p className="mt-1 text-xs wrap-anywhere text-indigo-800" data-testid="run-plan">{plan.explanation}</p> : null}
        <p className="mt-1 text-xs text-indigo-800">A timed action: it waits for its due time without holding a worker.{record ? ` A newer version of its record (${record}) may still replace it.` : ""}</p>
      </div>
    );
  }
  if (!sentence) return null;
  return (
    <div className="mb-4 rounded-md bg-slate-100 p-3 text-sm text-slate-800 ring-1 ring-slate-200" data-testid="run-timed">
      <p className="wrap-anywhere">
        <span className="font-semibold">{sentence.slice(0, sentence.indexOf(":") + 1)}</span>
        {sentence.slice(sentence.indexOf(":") + 1)}
      </p>
      {/* The plan's own words: a missing anchor names its path and value. */}
      {timed.reason === "no_anchor" && plan?.explanation ? <p className="mt-1 font-mono text-xs wrap-anywhere text-slate-700" data-testid="run-plan">{plan.explanation}</p> : null}
      <p className="mt-1 text-xs text-slate-600">
        This timed run was not sent{timed.reason === "no_anchor" ? "" : timed.dueAt ? <>; it was due <LocalTime iso={timed.dueAt} /></> : null}
        {record ? `; record ${record}` : ""}. {timed.reason === "no_anchor" ? "The event carried no time at the anchor: check the payload or the anchor path." : timed.reason === "late" ? "The worker reached it after its lateness window." : "Nothing went wrong."}
      </p>
    </div>
  );
}

function Meta({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <dt className="text-xs text-slate-500">{label}</dt>
      <dd className="text-slate-900">{children}</dd>
    </div>
  );
}

/** "Action 2: Slack message": the timed run's action as its applet's editor numbers and labels it. */
async function actionNameOf(appletId: string, index: number): Promise<string> {
  const applet = await appletDetail(services().app, appletId);
  const type = applet ? timedAction(applet.definition, index)?.type : undefined;
  const label = type ? (actionRegistry.get(type)?.label ?? type) : null;
  return label ? `Action ${index + 1}: ${label}` : `Action ${index + 1}`;
}

/** The step a failed run stopped at (a failure continue_on_error let pass does not count). */
function failedStepOf(steps: Step[]): string | null {
  const failed = steps.find((s) => s.status === "failed" && !s.continued);
  return failed ? stepIdOf(failed) : null;
}

/** What a waiting run waits for: its parked wait step's words and approval message. */
function waitingOf(steps: { kind: string; name: string; status: string; why?: string; output?: unknown }[], reason: string | null): { summary: string; message: string | null; kind: string; detail: unknown } {
  const parked = [...steps].reverse().find((s) => s.kind === "wait" && s.status === "running");
  const message = (parked?.output as { message?: unknown } | undefined)?.message;
  // The parked step's output is the wait's detail (when it times out, where its links went).
  return { summary: parked?.why ?? reason ?? "waiting", message: typeof message === "string" ? message : null, kind: parked?.name ?? "", detail: parked?.output ?? null };
}
