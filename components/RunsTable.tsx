"use client";
import Link from "next/link";
import { useState } from "react";
import { formatDuration } from "@/lib/ui/format";
import { useRunStream } from "@/lib/ui/stream";
import type { RunDetail, RunRow } from "@/lib/ui/types";
import { LocalTime } from "./LocalTime";
import { StatusBadge } from "./StatusBadge";

export interface RunsQuery {
  applet_id?: string;
  status?: string;
  from?: string;
  to?: string;
  cursor?: string;
}

const toSearch = (q: RunsQuery) => new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => Boolean(e[1]))).toString();

/**
 * A page of runs that stays current: every run.queued / run.updated message from /api/stream
 * refreshes that row (GET /api/runs/:id); a new run on the first page reloads the page so it
 * appears on top in filter order. While the stream is down the page reloads every 5 s.
 */
export function RunsTable({ initial, query, showApplet = true, emptyText }: { initial: RunRow[]; query: RunsQuery; showApplet?: boolean; emptyText?: string }) {
  const [rows, setRows] = useState(initial);
  const [live, setLive] = useState<"connecting" | "live" | "polling">("connecting");
  const firstPage = !query.cursor;

  async function reloadPage() {
    const res = await fetch(`/api/runs?${toSearch(query)}`).catch(() => null);
    if (!res?.ok) return;
    const body = (await res.json()) as { runs: RunRow[] };
    setRows(body.runs);
  }

  async function refreshRow(id: string) {
    const res = await fetch(`/api/runs/${id}`).catch(() => null);
    if (!res?.ok) return;
    const d = (await res.json()) as RunDetail;
    const { steps: _steps, ...run } = d.run;
    // A filtered page drops a row whose new status no longer matches.
    if (query.status && run.status !== query.status) return setRows((rs) => rs.filter((r) => r.id !== id));
    setRows((rs) => rs.map((r) => (r.id === id ? { ...run, applet_name: d.applet?.name ?? r.applet_name } : r)));
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
      else rows.forEach((r) => (r.status === "queued" || r.status === "running") && void refreshRow(r.id));
    },
  });

  return (
    <div>
      <p className="mb-2 flex items-center gap-1.5 text-xs text-slate-500" aria-live="polite">
        <span className={`inline-block h-2 w-2 rounded-full ${live === "live" ? "bg-green-500" : live === "polling" ? "bg-amber-500" : "bg-slate-300"}`} />
        {live === "live" ? "Live" : live === "polling" ? "Stream unavailable: refreshing every 5 s" : "Connecting…"}
      </p>
      {rows.length === 0 ? (
        <div className="card py-8 text-center text-sm text-slate-600">{emptyText ?? (Object.values(query).some(Boolean) ? "No runs match these filters." : "No runs yet.")}</div>
      ) : (
        <div className="overflow-x-auto rounded-lg bg-white shadow-sm ring-1 ring-slate-200">
          <table className="min-w-full divide-y divide-slate-200" data-testid="runs-table">
            <thead className="bg-slate-50">
              <tr>
                <th className="th">Status</th>
                {showApplet ? <th className="th">Applet</th> : null}
                <th className="th">Created</th>
                <th className="th">Attempt</th>
                <th className="th">Duration</th>
                <th className="th">Error / reason</th>
                <th className="th">
                  <span className="sr-only">Open</span>
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-100">
              {rows.map((r) => (
                <tr key={r.id} className="hover:bg-slate-50" data-run-id={r.id}>
                  <td className="td">
                    <StatusBadge status={r.status} />
                  </td>
                  {showApplet ? (
                    <td className="td">
                      {r.applet_name ? (
                        <Link href={`/applets/${r.applet_id}`} className="block max-w-[14rem] truncate text-slate-800 hover:underline" title={r.applet_name}>
                          {r.applet_name}
                        </Link>
                      ) : (
                        <span className="text-slate-400">deleted</span>
                      )}
                    </td>
                  ) : null}
                  <td className="td whitespace-nowrap text-slate-700">
                    <LocalTime iso={r.created_at} />
                  </td>
                  <td className="td tabular-nums text-slate-700">
                    {r.attempt}/{r.max_attempts}
                    {r.status === "queued" && r.next_attempt_at && r.attempt > 1 ? (
                      <span className="block text-xs text-slate-500">
                        next <LocalTime iso={r.next_attempt_at} />
                      </span>
                    ) : null}
                  </td>
                  <td className="td tabular-nums text-slate-700">{r.started_at && r.finished_at ? formatDuration(new Date(r.finished_at).getTime() - new Date(r.started_at).getTime()) : "–"}</td>
                  <td className="td">
                    {/* A skipped run's "error" is the filter's reason, not a failure. */}
                    <div className={`max-w-[15rem] truncate text-xs 2xl:max-w-[28rem] ${r.status === "skipped" ? "text-slate-600" : "text-red-800"}`} title={r.error ?? undefined}>
                      {r.error ?? ""}
                    </div>
                  </td>
                  <td className="td text-right">
                    <Link href={`/runs/${r.id}`} className="text-sm font-medium text-indigo-700 hover:underline">
                      Details
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
