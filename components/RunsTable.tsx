"use client";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { formatDuration, shortId } from "@/lib/ui/format";
import { runReasonCell, timedInfoOf } from "@/lib/ui/planned";
import { useRunStream } from "@/lib/ui/stream";
import type { RunRow } from "@/lib/api/queries";
import type { WaitingView } from "@/lib/waits/control";
import { waitSummary } from "@/lib/waits/words";
import { api } from "@/lib/ui/api-client";
import { LocalTime } from "./LocalTime";
import { RunStatusBadge, ZoneName } from "./RunStatusBadge";
import { BulkRetryBar, SelectRunBox, retryable } from "./BulkRetry";

export interface RunsQuery {
  applet_id?: string;
  status?: string;
  /** A timed run's reason: superseded, late, quiet_hours, … */
  reason?: string;
  from?: string;
  to?: string;
  cursor?: string;
  /** Text in the run's error (search). */
  error?: string;
  /** Text in the event's payload (search). */
  payload?: string;
}


/**
 * A page of runs that stays current: every run.queued / run.updated message from /api/stream
 * refreshes that row (GET /api/runs/:id); a new run on the first page reloads the page so it
 * appears on top in filter order. While the stream is down the page reloads every 5 s.
 */
export function RunsTable({ initial, query, showApplet = true, emptyText }: { initial: RunRow[]; query: RunsQuery; showApplet?: boolean; emptyText?: string }) {
  const [rows, setRows] = useState(initial);
  const [live, setLive] = useState<"connecting" | "live" | "polling">("connecting");
  const firstPage = !query.cursor;
  const router = useRouter();
  // Bulk retry: failed and dead runs of this page, selected by their checkboxes.
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const selectable = rows.filter((r) => retryable(r.status));
  const chosen = selectable.filter((r) => selected.has(r.id)).map((r) => r.id);
  const select = (id: string, on: boolean) =>
    setSelected((s) => {
      const next = new Set(s);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });

  // A waiting run's reason is stored in its applet's zone: the list says it again in the reader's
  // (the zone the table names), from what GET /api/waits tells about each wait.
  const [waits, setWaits] = useState<Map<string, WaitingView>>(new Map());
  const waitingIds = rows.filter((r) => r.status === "waiting").map((r) => r.id).join(",");
  useEffect(() => {
    if (!waitingIds) return;
    let current = true;
    void api.api.waits
      .$get({ query: query.applet_id ? { applet_id: query.applet_id } : {} })
      .then(async (res) => {
        if (!res.ok || !current) return;
        const { waiting } = await res.json();
        setWaits(new Map(waiting.map((w) => [w.run_id, w])));
      })
      .catch(() => undefined);
    return () => {
      current = false;
    };
  }, [waitingIds, query.applet_id]);
  const waitWords = (id: string): string | null => {
    const w = waits.get(id);
    if (!w) return null;
    const timezone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    return waitSummary({ kind: w.kind, detail: { sent: w.sent, until: w.until, duration: w.duration, timezone }, timeoutAt: w.timeout_at }, new Date());
  };

  async function reloadPage() {
    const res = await api.api.runs.$get({ query }).catch(() => null);
    if (!res?.ok) return;
    setRows((await res.json()).runs);
  }

  async function refreshRow(id: string) {
    const res = await api.api.runs[":id"].$get({ param: { id } }).catch(() => null);
    if (!res?.ok) return;
    const d = await res.json();
    const { steps: _steps, ...run } = d.run;
    // A filtered page drops a row whose new status no longer matches.
    if (query.status && run.status !== query.status) return setRows((rs) => rs.filter((r) => r.id !== id));
    setRows((rs) => rs.map((r) => (r.id === id ? { ...run, applet_name: d.applet?.name ?? r.applet_name } : r)));
  }

  /** The whole row opens the run (the id cell is the real link, for keyboards and new tabs). */
  function openRow(e: React.MouseEvent, id: string) {
    if ((e.target as HTMLElement).closest("a, button, input, select, textarea")) return;
    // Selecting text in a row (to copy an error) is not a click on it.
    if (window.getSelection()?.toString()) return;
    if (e.metaKey || e.ctrlKey) window.open(`/runs/${id}`, "_blank", "noopener");
    else router.push(`/runs/${id}`);
  }

  useRunStream({
    onMessage(m) {
      if (query.applet_id && m.applet_id !== query.applet_id) return;
      if (rows.some((r) => r.id === m.run_id)) void refreshRow(m.run_id);
      else if (firstPage) void reloadPage();
    },
    onOpen() {
      setLive("live");
      if (firstPage) void reloadPage();
    },
    onFallback() {
      setLive("polling");
      if (firstPage) void reloadPage();
      else rows.forEach((r) => (r.status === "queued" || r.status === "retrying" || r.status === "running") && void refreshRow(r.id));
    },
  });

  return (
    <div>
      <p className="mb-2 flex items-center gap-1.5 text-xs text-slate-500" aria-live="polite">
        <span className={`inline-block h-2 w-2 rounded-full ${live === "live" ? "bg-green-500" : live === "polling" ? "bg-amber-500" : "bg-slate-300"}`} />
        <span>{live === "live" ? "Live" : live === "polling" ? "Stream unavailable: refreshing every 5 s" : "Connecting…"}</span>
        <span className="ml-auto">
          Times in <ZoneName />
        </span>
      </p>
      {rows.length === 0 ? (
        <div className="card py-8 text-center text-sm text-slate-600">{emptyText ?? (Object.values(query).some(Boolean) ? "No runs match these filters." : "No runs yet.")}</div>
      ) : (
        // Fixed layout: the table is exactly as wide as its container (the error column truncates
        // instead of pushing the row off-screen); below ~50rem it scrolls inside its own box, and
        // on a phone each run is a card of labelled cells (.stack-rows), run and status first.
        <>
        <BulkRetryBar
          selected={chosen}
          onClear={() => setSelected(new Set())}
          onDone={(ids) => {
            setSelected(new Set());
            ids.forEach((id) => void refreshRow(id));
          }}
        />
        <div className="relative overflow-x-auto rounded-lg bg-white shadow-sm ring-1 ring-slate-200">
          <table className={`stack-rows w-full divide-y divide-slate-200 sm:table-fixed ${showApplet ? "sm:min-w-[50rem]" : "sm:min-w-[38rem]"}`} data-testid="runs-table">
            <RunsTableHead selectable={selectable} chosen={chosen} setSelected={setSelected} showApplet={showApplet} />
            <tbody className="divide-y divide-slate-100">
              {rows.map((r) => (
                <RunsTableRow
                  key={r.id}
                  r={r}
                  showApplet={showApplet}
                  waitText={r.status === "waiting" ? waitWords(r.id) : null}
                  checked={selected.has(r.id)}
                  onSelect={select}
                  onOpen={openRow}
                />
              ))}
            </tbody>
          </table>
        </div>
        </>
      )}
    </div>
  );
}

function RunsTableHead({
  selectable,
  chosen,
  setSelected,
  showApplet,
}: {
  selectable: RunRow[];
  chosen: string[];
  setSelected: (s: Set<string>) => void;
  showApplet: boolean;
}) {
  return (
    <thead className="bg-slate-50">
      <tr>
        <th className={`th pr-0 sm:w-10 ${selectable.length ? "stack-keep" : ""}`}>
          {selectable.length ? (
            <label className="inline-flex items-center gap-2">
            <input
              type="checkbox"
              className="h-4 w-4"
              checked={chosen.length === selectable.length}
              onChange={(e) => setSelected(e.target.checked ? new Set(selectable.map((r) => r.id)) : new Set())}
              aria-label={`Select all ${selectable.length} failed or dead runs on this page for retry`}
              data-testid="select-all-runs"
            />
            <span className="font-normal normal-case sm:hidden" aria-hidden="true">Select all failed or dead</span>
            </label>
          ) : (
            <span className="sr-only">Select</span>
          )}
        </th>
        <th className="th w-24">Run</th>
        <th className="th w-44">Status</th>
        {showApplet ? <th className="th">Applet</th> : null}
        <th className="th w-40">Created</th>
        <th className="th w-28">Attempt</th>
        <th className="th w-24">Duration</th>
        <th className="th">Error / reason</th>
      </tr>
    </thead>
  );
}

function RunsTableRow({
  r,
  showApplet,
  waitText,
  checked,
  onSelect,
  onOpen,
}: {
  r: RunRow;
  showApplet: boolean;
  /** A waiting run's reason in the reader's zone, when GET /api/waits told it. */
  waitText: string | null;
  checked: boolean;
  onSelect: (id: string, on: boolean) => void;
  onOpen: (e: React.MouseEvent, id: string) => void;
}) {
  const timed = timedInfoOf(r);
  const reason = runReasonCell({ ...r, ...timed });
  const cell = r.status === "waiting" ? { ...reason, text: waitText ?? reason.text } : reason;
  return (
    <tr className="cursor-pointer hover:bg-slate-50" data-run-id={r.id} onClick={(e) => onOpen(e, r.id)}>
      <td className={`td w-10 pr-0 ${retryable(r.status) ? "" : "max-sm:hidden"}`}>{retryable(r.status) ? <SelectRunBox id={r.id} label={`run ${shortId(r.id)}`} checked={checked} onChange={onSelect} /> : null}</td>
      <td className="td" data-label="Run">
        <Link href={`/runs/${r.id}`} className="font-mono text-sm font-medium text-indigo-700 hover:underline" aria-label={`Run ${shortId(r.id)}, ${r.status}`} data-testid="run-link">
          {shortId(r.id)}
        </Link>
      </td>
      <td className="td">
        <RunStatusBadge run={r} />
      </td>
      {showApplet ? (
        <td className="td stack-full">
          {r.applet_name ? (
            <Link href={`/applets/${r.applet_id}`} className="block truncate text-slate-800 hover:underline max-sm:font-medium" title={r.applet_name}>
              {r.applet_name}
            </Link>
          ) : (
            <span className="text-slate-400">deleted</span>
          )}
        </td>
      ) : null}
      <td className="td text-slate-700" data-label="Created">
        <LocalTime iso={r.created_at} compact />
        {/* A timed run is due later than it was made. */}
        {timed.dueAt ? (
          <span className="block text-xs text-slate-500 max-sm:ml-1 max-sm:inline" data-testid="run-due">
            due <LocalTime iso={timed.dueAt} compact />
          </span>
        ) : null}
      </td>
      <td className="td tabular-nums text-slate-700" data-label="Attempt">
        {r.attempt}/{r.max_attempts}
      </td>
      <td className="td tabular-nums text-slate-700" data-label="Duration">{r.started_at && r.finished_at ? formatDuration(new Date(r.finished_at).getTime() - new Date(r.started_at).getTime()) : "–"}</td>
      <td className={`td stack-full ${cell.text ? "" : "max-sm:hidden"}`}>
        {/* A skipped run's "error" is the filter's reason, and a timed run's reason is in words: neither is a failure. */}
        <div className={`text-xs ${cell.tone === "reason" ? "line-clamp-2 text-slate-600" : "truncate text-red-800"}`} title={cell.text || undefined}>
          {cell.text}
        </div>
      </td>
    </tr>
  );
}
