const STYLES: Record<string, string> = {
  queued: "bg-slate-100 text-slate-700 ring-slate-300",
  // Queued again after a failed attempt: not healthy, not dead yet.
  retrying: "bg-amber-50 text-amber-900 ring-amber-300",
  running: "bg-blue-50 text-blue-700 ring-blue-300",
  succeeded: "bg-green-50 text-green-800 ring-green-300",
  failed: "bg-red-50 text-red-700 ring-red-300",
  dead: "bg-red-100 text-red-900 ring-red-400",
  skipped: "bg-amber-50 text-amber-800 ring-amber-300",
  // Timed runs: waiting for their due time, and replaced by a newer version of their record.
  planned: "bg-indigo-50 text-indigo-800 ring-indigo-300",
  pending: "bg-indigo-50 text-indigo-800 ring-indigo-300",
  cancelled: "bg-slate-100 text-slate-600 ring-slate-300",
  // Parked at a wait step: holds nothing, resumes by time, call or decision.
  waiting: "bg-violet-50 text-violet-800 ring-violet-300",
};

/** A run or step status as a small coloured label (text, not colour alone, carries the meaning). */
export function StatusBadge({ status, testId }: { status: string | null | undefined; testId?: string }) {
  if (!status) return <span className="text-slate-400">never run</span>;
  return (
    <span data-testid={testId} className={`inline-flex items-center rounded px-1.5 py-0.5 text-xs font-medium ring-1 ring-inset ${STYLES[status] ?? STYLES.queued}`}>
      {status}
    </span>
  );
}
