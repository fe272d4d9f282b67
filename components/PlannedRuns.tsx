"use client";
import Link from "next/link";
import { useCallback, useEffect, useState } from "react";
import { plannedListsOf, reasonSentence, RECENT_LIMIT, subjectWords, UPCOMING_LIMIT, type PlannedLists } from "@/lib/ui/planned";
import { useRunStream } from "@/lib/ui/stream";
import { plannedRuns, type PlannedItem } from "@/lib/ui/planned-api";
import { Countdown } from "./Countdown";
import { LocalTime } from "./LocalTime";
import { StatusBadge } from "./StatusBadge";
import { ZoneName } from "./RunStatusBadge";

/** Reads the applet's pending runs and its latest cancelled and skipped ones. */
async function loadPlanned(appletId: string): Promise<PlannedLists | { error: string }> {
  const [pending, cancelled, skipped] = await Promise.all([plannedRuns(appletId, "pending", UPCOMING_LIMIT), plannedRuns(appletId, "cancelled", RECENT_LIMIT), plannedRuns(appletId, "skipped", RECENT_LIMIT)]);
  for (const r of [pending, cancelled, skipped]) if (!r.ok) return { error: r.error };
  const ok = (r: typeof pending) => (r.ok ? r.value : []);
  return plannedListsOf(ok(pending), [...ok(cancelled), ...ok(skipped)]);
}

/**
 * The applet page's timed runs: "Upcoming", its planned runs by due time with a countdown
 * that ticks, and the ones recently cancelled or skipped with the reason in plain words. Kept
 * current by the run stream (an event of this applet plans; a sweep dispatches) and reloaded once
 * the first due time has passed.
 */
export function PlannedRuns({ appletId, actionLabels, initial }: { appletId: string; actionLabels: Record<string, string>; initial?: PlannedLists }) {
  const [lists, setLists] = useState<PlannedLists | null>(initial ?? null);
  const [error, setError] = useState<string | null>(null);

  const reload = useCallback(async () => {
    const answer = await loadPlanned(appletId);
    if ("error" in answer) return setError(answer.error);
    setError(null);
    setLists(answer);
  }, [appletId]);

  useRunStream({
    onMessage(m) {
      if (m.applet_id === appletId) void reload();
    },
    onOpen: () => void reload(),
    onFallback: () => void reload(),
  });

  // Once the first run is due the sweep takes it: look again shortly after.
  const firstDue = lists?.upcoming[0]?.dueAt;
  useEffect(() => {
    if (!firstDue) return;
    const wait = Math.max(Date.parse(firstDue) - Date.now(), 0) + 2000;
    // Timers cap at 24.8 days; a later run is looked at again by the stream or a reload.
    if (wait > 2 ** 31 - 1) return;
    const timer = setTimeout(() => void reload(), wait);
    return () => clearTimeout(timer);
  }, [firstDue, reload]);

  const label = (item: PlannedItem) => `Action ${item.actionIndex + 1}: ${(item.actionType && actionLabels[item.actionType]) ?? item.actionType ?? "deleted"}`;

  return (
    <section className="mb-6" aria-labelledby="upcoming-heading" data-testid="planned-runs">
      <div className="mb-2 flex flex-wrap items-baseline justify-between gap-2">
        <h2 id="upcoming-heading" className="text-base font-semibold">
          Upcoming{lists?.upcoming.length ? ` (${lists.upcoming.length}${lists.upcoming.length >= UPCOMING_LIMIT ? "+" : ""})` : ""}
        </h2>
        <span className="text-xs text-slate-500">
          Times in <ZoneName />
        </span>
      </div>
      {error ? <p className="mb-2 rounded-md bg-red-50 p-2 text-sm text-red-800 ring-1 ring-red-200">Could not load the planned runs: {error}</p> : null}
      {!lists ? (
        <div className="card py-6 text-center text-sm text-slate-600">Loading the planned runs…</div>
      ) : lists.upcoming.length === 0 ? (
        <div className="card py-6 text-center text-sm text-slate-600" data-testid="upcoming-empty">
          Nothing planned. A timed action plans a run when an event arrives.
        </div>
      ) : (
        <ul className="divide-y divide-slate-100 rounded-lg bg-white shadow-sm ring-1 ring-slate-200" data-testid="upcoming">
          {lists.upcoming.map((item) => (
            <li key={item.id} className="flex flex-col gap-1 px-3 py-2.5 text-sm sm:flex-row sm:items-center sm:gap-4" data-planned-id={item.id}>
              <div className="flex min-w-0 flex-wrap items-baseline gap-x-3 gap-y-0.5 sm:w-80 sm:shrink-0">
                <span className="font-medium text-slate-900" data-testid="due-at">
                  <LocalTime iso={item.dueAt} />
                </span>
                {item.dueAt ? <Countdown dueAt={item.dueAt} className="text-xs font-medium text-indigo-700 tabular-nums" /> : null}
              </div>
              <div className="min-w-0 flex-1">
                <Link href={`/runs/${item.runId ?? item.id}`} className="font-medium text-indigo-700 hover:underline">
                  {label(item)}
                </Link>
                {subjectWords(item.subjectId, item.subjectVersion) ? <span className="text-slate-600"> · {subjectWords(item.subjectId, item.subjectVersion)}</span> : null}
                {item.originalDueAt && item.explanation ? <p className="text-xs wrap-anywhere text-slate-600">{item.explanation}</p> : null}
              </div>
            </li>
          ))}
        </ul>
      )}
      {lists?.recent.length ? (
        <div className="mt-4">
          <h3 className="mb-2 text-sm font-semibold text-slate-700">Recently cancelled or skipped</h3>
          <ul className="divide-y divide-slate-100 rounded-lg bg-white shadow-sm ring-1 ring-slate-200" data-testid="planned-recent">
            {lists.recent.map((item) => (
              <li key={item.id} className="flex flex-col gap-1 px-3 py-2.5 text-sm sm:flex-row sm:items-start sm:gap-4" data-planned-id={item.id}>
                <div className="flex flex-wrap items-center gap-2 sm:w-80 sm:shrink-0">
                  <StatusBadge status={item.status} />
                  <span className="text-slate-700">
                    due <LocalTime iso={item.dueAt} />
                  </span>
                </div>
                <div className="min-w-0 flex-1">
                  <Link href={`/runs/${item.runId ?? item.id}`} className="font-medium text-indigo-700 hover:underline">
                    {label(item)}
                  </Link>
                  {subjectWords(item.subjectId, item.subjectVersion) ? <span className="text-slate-600"> · {subjectWords(item.subjectId, item.subjectVersion)}</span> : null}
                  <p className="text-xs wrap-anywhere text-slate-700" data-testid="planned-reason">
                    {reasonSentence(item.status, item.reason) ?? item.explanation}
                  </p>
                </div>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </section>
  );
}
