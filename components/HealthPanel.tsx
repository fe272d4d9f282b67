import { LocalTime } from "@/components/LocalTime";
import { processTotal, type HealthFigures } from "@/lib/metrics/collect";
import { formatAge } from "@/lib/core/overdue";

const RUN_STATUSES = ["queued", "running", "succeeded", "skipped", "failed", "dead"] as const;

/**
 * Settings → Health: the figures GET /metrics gives Prometheus, for someone without
 * Grafana. Store figures are as of now; counters are since each process started (a restart
 * begins them at 0, as in Prometheus).
 */
export function HealthPanel({ f, heartbeatAt }: { f: HealthFigures; heartbeatAt: string | null }) {
  const byStatus = new Map<string, number>();
  for (const r of f.runs) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + r.count);
  const sum = (name: string, labels: Record<string, string> = {}, metricName?: string) => processTotal(f, name, labels, metricName);
  const latenessCount = sum("whenthen_schedule_lateness_seconds", {}, "whenthen_schedule_lateness_seconds_count");
  const latenessSum = sum("whenthen_schedule_lateness_seconds", {}, "whenthen_schedule_lateness_seconds_sum");
  const durationCount = sum("whenthen_run_duration_seconds", {}, "whenthen_run_duration_seconds_count");
  const durationSum = sum("whenthen_run_duration_seconds", {}, "whenthen_run_duration_seconds_sum");
  const webhooks = ["accepted", "duplicate", "disabled", "refused", "not_found", "too_large", "unavailable", "error"]
    .map((o) => [o, sum("whenthen_webhook_requests_total", { outcome: o })] as const)
    .filter(([, n]) => n > 0);
  const smtp = ["accepted", "recipient_rejected", "too_large", "unparseable", "failed"]
    .map((o) => [o, sum("whenthen_smtp_messages_total", { outcome: o })] as const)
    .filter(([, n]) => n > 0);
  const stale = f.heartbeatAgeSeconds === null || f.workersLive === 0;
  const seconds = (s: number) => (s < 10 ? `${s.toFixed(2)} s` : formatAge(s * 1000));
  return (
    <div className="grid grid-cols-1 gap-4 text-sm sm:grid-cols-2 lg:grid-cols-3" data-testid="health-panel">
      <Figure label="Worker">
        <span className={stale ? "text-red-800" : "text-green-800"} data-testid="health-worker">
          {f.workersLive} live
        </span>
        <span className="block text-xs text-slate-600">
          {heartbeatAt ? (
            <>
              last heartbeat <LocalTime iso={heartbeatAt} relative />
            </>
          ) : (
            "no heartbeat yet"
          )}
          {" · SMTP "}
          {f.smtpListening > 0 ? "listening" : "not listening"}
        </span>
      </Figure>
      <Figure label="Queue">
        <span data-testid="health-queue">{f.queued} queued</span>
        <span className="block text-xs text-slate-600">{f.oldestDueAgeSeconds > 0 ? `the oldest due one has waited ${seconds(f.oldestDueAgeSeconds)}` : "nothing is waiting past its time"}</span>
      </Figure>
      <Figure label="Triggers">
        <span className={f.triggerErrors + f.overdueChecks > 0 ? "text-red-800" : undefined} data-testid="health-triggers">
          {f.triggerErrors} with an error · {f.overdueChecks} overdue
        </span>
        <span className="block text-xs text-slate-600">poll errors: {sum("whenthen_poll_errors_total")}</span>
      </Figure>
      <Figure label="Runs (24 h, and all waiting)" wide>
        <span className="flex flex-wrap gap-x-3 gap-y-1" data-testid="health-runs">
          {RUN_STATUSES.map((s) => (
            <span key={s} className={(s === "failed" || s === "dead") && (byStatus.get(s) ?? 0) > 0 ? "text-red-800" : undefined}>
              {s} <span className="font-medium tabular-nums">{byStatus.get(s) ?? 0}</span>
            </span>
          ))}
        </span>
      </Figure>
      <Figure label="Executed (since the worker started)">
        <span data-testid="health-started">
          {sum("whenthen_runs_started_total")} started · {sum("whenthen_runs_finished_total")} finished
        </span>
        <span className="block text-xs text-slate-600">
          {durationCount > 0 ? `average ${seconds(durationSum / durationCount)} per attempt` : "no attempt yet"}
          {latenessCount > 0 ? ` · checks ${seconds(latenessSum / latenessCount)} late on average` : ""}
        </span>
      </Figure>
      <Figure label="Webhooks (since the web started)">
        <span data-testid="health-webhooks">{webhooks.length ? webhooks.map(([o, n]) => `${o.replace("_", " ")} ${n}`).join(" · ") : "none yet"}</span>
      </Figure>
      <Figure label="Email and alerts">
        <span>{smtp.length ? smtp.map(([o, n]) => `${o.replace("_", " ")} ${n}`).join(" · ") : "no email received"}</span>
        <span className="block text-xs text-slate-600">
          alerts sent {sum("whenthen_alert_sends_total", { outcome: "sent" })}, failed {sum("whenthen_alert_sends_total", { outcome: "failed" })}
        </span>
      </Figure>
    </div>
  );
}

function Figure({ label, wide, children }: { label: string; wide?: boolean; children: React.ReactNode }) {
  return (
    <div className={`rounded-md bg-slate-50 px-3 py-2 ring-1 ring-slate-200 ${wide ? "sm:col-span-2" : ""}`}>
      <div className="text-xs font-medium tracking-wide text-slate-500 uppercase">{label}</div>
      <div className="mt-1">{children}</div>
    </div>
  );
}
