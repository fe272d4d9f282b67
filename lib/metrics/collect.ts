import { Gauge, Registry } from "prom-client";
import type { App } from "../app";
import { mergeSnapshots, parseSnapshot, processMetrics, total, type MetricsSnapshot, METRIC_PREFIX } from "./index";
import { overdueMs } from "../core/overdue";
import { quietApplets } from "../fires/check";

/** How far back `whenthen_runs` counts finished runs (queued and running ones count whatever their age). */
export const RUNS_WINDOW_MS = 86_400_000;

/** What the store and the live workers say at one moment: GET /metrics renders it, the Settings Health panel shows it. */
export interface HealthFigures {
  at: string;
  /** Runs per applet and status (finished ones of the last 24 h; every queued and running one). */
  runs: { appletId: string; appletName: string; status: string; count: number }[];
  queued: number;
  /** Seconds since the oldest due queued run became due; 0 when none is due. */
  oldestDueAgeSeconds: number;
  workersLive: number;
  /** Seconds since the last worker heartbeat; null when no worker ever ran. */
  heartbeatAgeSeconds: number | null;
  /** Live workers whose SMTP receiver listens. */
  smtpListening: number;
  /** Applets whose trigger's last check failed, and enabled polled applets whose check is overdue. */
  triggerErrors: number;
  overdueChecks: number;
  /** The fire ledger's stored rows (counts summed) of the last 24 h, by outcome; a run's own row is in `runs`. */
  ledger: { outcome: string; count: number }[];
  /** Applets quiet now (beyond their expected activity). */
  quietApplets: number;
  /** Runs parked at a wait step, by what they wait for (delay, until, for_call, for_approval). */
  waiting: Record<string, number>;
  /** Every process's counters: this web process's and each live worker's last heartbeat snapshot. */
  processes: { process: string; metrics: MetricsSnapshot }[];
}

export async function collectHealthFigures(app: Pick<App, "store" | "clock">): Promise<HealthFigures> {
  const now = app.clock.now();
  const since = new Date(now.getTime() - RUNS_WINDOW_MS).toISOString();
  const [tally, live, applets, triggers, heartbeat, own, ledger, waiting] = await Promise.all([
    app.store.runs.tally(since, now),
    app.store.workers.live(now),
    app.store.applets.list(),
    app.store.triggerState.overview(),
    app.store.jobLocks.get("worker_heartbeat"),
    processMetrics().registry.getMetricsAsJSON(),
    app.store.fires.totals(since),
    app.store.waits.countWaiting(),
  ]);
  const { quiet } = await quietApplets(app, now, applets);
  const names = new Map(applets.map((a) => [a.id, a.name]));
  const enabled = new Set(applets.filter((a) => a.enabled).map((a) => a.id));
  const seen = heartbeat?.lastRunAt ? Date.parse(heartbeat.lastRunAt) : NaN;
  return {
    at: now.toISOString(),
    runs: tally.byApplet.map((r) => ({ ...r, count: Number(r.count), appletName: names.get(r.appletId) ?? "" })),
    queued: Number(tally.queued),
    oldestDueAgeSeconds: tally.oldestDueAt ? Math.max(0, now.getTime() - Date.parse(tally.oldestDueAt)) / 1000 : 0,
    workersLive: live.length,
    heartbeatAgeSeconds: Number.isFinite(seen) ? Math.max(0, now.getTime() - seen) / 1000 : null,
    smtpListening: live.filter((w) => w.smtpPort !== null && w.smtpPort !== undefined).length,
    triggerErrors: triggers.filter((t) => t.lastError !== null).length,
    ledger,
    quietApplets: quiet.size,
    waiting,
    overdueChecks: triggers.filter((t) => enabled.has(t.appletId) && overdueMs(t.nextRunAt, now) !== null).length,
    processes: [
      { process: "web", metrics: own },
      ...live.flatMap((w) => {
        const m = parseSnapshot(w.metrics ?? null);
        return m ? [{ process: w.id, metrics: m }] : [];
      }),
    ],
  };
}

/** The figures in the Prometheus text exposition format (version 0.0.4): what GET /metrics answers. */
export async function renderMetrics(f: HealthFigures): Promise<{ contentType: string; body: string }> {
  const registry = new Registry();
  const registers = [registry];
  const gauge = (name: string, help: string, value: number | null) => {
    const g = new Gauge({ name: `${METRIC_PREFIX}${name}`, help, registers });
    if (value !== null) g.set(value);
  };
  const runs = new Gauge({
    name: `${METRIC_PREFIX}runs`,
    help: "Stored runs by applet and status: finished ones created in the last 24 h, and every queued and running one.",
    labelNames: ["applet", "applet_name", "status"],
    registers,
  });
  for (const r of f.runs) runs.set({ applet: r.appletId, applet_name: r.appletName, status: r.status }, r.count);
  gauge("queue_depth", "Runs waiting in the queue (due now or for a later retry).", f.queued);
  gauge("queue_oldest_due_age_seconds", "How long the oldest due queued run has waited since it became due; 0 when none is due.", f.oldestDueAgeSeconds);
  gauge("workers_live", "Workers whose lease is current.", f.workersLive);
  // Absent until a worker has ever run: no number would be honest.
  if (f.heartbeatAgeSeconds !== null) gauge("worker_heartbeat_age_seconds", "Seconds since the last worker heartbeat.", f.heartbeatAgeSeconds);
  gauge("smtp_receivers_listening", "Live workers whose inbound SMTP receiver listens.", f.smtpListening);
  gauge("trigger_errors", "Applets whose trigger's last check failed.", f.triggerErrors);
  gauge("overdue_checks", "Enabled polled applets whose next check is overdue.", f.overdueChecks);
  const ledger = new Gauge({
    name: `${METRIC_PREFIX}fire_ledger_entries`,
    help: "Fires the ledger stored in the last 24 h by outcome (late, missed, dropped_catchup, deduplicated, refused, paused, disabled); fires that became runs are counted in whenthen_runs.",
    labelNames: ["outcome"],
    registers,
  });
  for (const r of f.ledger) ledger.set({ outcome: r.outcome }, r.count);
  gauge("applets_quiet", "Enabled applets quiet beyond their expected activity (a schedule's slot or a poll's check not taken, or no event for the hours the user expects).", f.quietApplets);
  const waiting = new Gauge({
    name: `${METRIC_PREFIX}runs_waiting`,
    help: "Runs parked at a wait step now, by what they wait for (delay, until, for_call, for_approval); they hold no worker.",
    labelNames: ["kind"],
    registers,
  });
  for (const kind of ["delay", "until", "for_call", "for_approval"]) waiting.set({ kind }, f.waiting[kind] ?? 0);
  const merged = Registry.merge([registry, mergeSnapshots(f.processes)]);
  return { contentType: merged.contentType, body: await merged.metrics() };
}

/** A counter summed over every process and series (the Health panel's totals). */
export const processTotal = (f: HealthFigures, name: string, labels: Record<string, string> = {}, metricName?: string): number =>
  f.processes.reduce((sum, p) => sum + total(p.metrics, name, labels, metricName), 0);
