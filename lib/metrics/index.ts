import { AggregatorRegistry, Counter, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from "prom-client";

/**
 * The counters and histograms one process keeps in memory, in prom-client metrics of
 * its own registry. What happens in the process increments them; nothing here touches the
 * database, so a webhook pays an in-memory increment, never a write.
 *
 * Every process has one set (`processMetrics()`), shared by both module graphs of the web process
 * (server.ts and Next's) through a registered symbol, like lib/services. A worker publishes a
 * snapshot of its set (`snapshot()`) with its heartbeat; GET /metrics in the web process merges
 * the snapshots of the live workers with its own (`mergeSnapshots`), each series labelled with the
 * process it came from, so a restart of one worker is a counter reset of its own series only.
 *
 * Other modules import the metric they count (`processMetrics().alertSends.inc({ outcome })`).
 */
export interface ProcessMetrics {
  registry: Registry;
  /** A run was claimed and began executing (also one claimed together with the previous finish). */
  runsStarted: Counter;
  /** A run ended: status succeeded | failed | dead | skipped | retry (a failed attempt going back to the queue). */
  runsFinished: Counter<"status">;
  /** From claim to end of the attempt, in seconds, by the same status. */
  runDuration: Histogram<"status">;
  /** Webhook requests by outcome (accepted, duplicate, disabled, refused, not_found, too_large, unavailable, error); counted with `countWebhook`. */
  webhookRequests: Counter<"outcome">;
  /**
   * The webhook hot path's increment: a plain number per outcome, handed to `webhookRequests` when
   * the registry is read (a scrape, a heartbeat). prom-client's own `inc` hashes the labels on every
   * call (measured ~0.7–1 µs); this is a Map update.
   */
  countWebhook(outcome: string): void;
  /** A polled trigger's check (schedule, rss, poll): when it ran minus the slot it was due at, in seconds. */
  scheduleLateness: Histogram<"trigger">;
  /** A polled trigger's check that ended with an error (the feed could not be read, the URL failed). */
  pollErrors: Counter<"trigger">;
  /** Inbound SMTP messages by outcome (accepted, recipient_rejected, too_large, unparseable, failed). */
  smtpMessages: Counter<"outcome">;
  /** Failure alerts and recovery notices sent (outcome sent | failed), incremented by the alert sender. */
  alertSends: Counter<"outcome">;
}

export const METRIC_PREFIX = "whenthen_";

export function createProcessMetrics(): ProcessMetrics {
  const registry = new Registry();
  const registers = [registry];
  const webhookCounts = new Map<string, number>();
  const webhookReported = new Map<string, number>();
  return {
    registry,
    runsStarted: new Counter({ name: `${METRIC_PREFIX}runs_started_total`, help: "Runs claimed by a worker and started.", registers }),
    runsFinished: new Counter({
      name: `${METRIC_PREFIX}runs_finished_total`,
      help: "Run attempts that ended, by outcome (retry: the attempt failed and the run went back to the queue).",
      labelNames: ["status"],
      registers,
    }),
    runDuration: new Histogram({
      name: `${METRIC_PREFIX}run_duration_seconds`,
      help: "Time from a run's claim to the end of its attempt, by outcome.",
      labelNames: ["status"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    }),
    webhookRequests: new Counter({
      name: `${METRIC_PREFIX}webhook_requests_total`,
      help: "Webhook requests by outcome.",
      labelNames: ["outcome"],
      registers,
      collect() {
        for (const [outcome, n] of webhookCounts) {
          const delta = n - (webhookReported.get(outcome) ?? 0);
          if (delta > 0) this.inc({ outcome }, delta);
          webhookReported.set(outcome, n);
        }
      },
    }),
    countWebhook: (outcome) => void webhookCounts.set(outcome, (webhookCounts.get(outcome) ?? 0) + 1),
    scheduleLateness: new Histogram({
      name: `${METRIC_PREFIX}schedule_lateness_seconds`,
      help: "A polled trigger's check (schedule, rss, poll): the time it ran minus the slot it was due at.",
      labelNames: ["trigger"],
      buckets: [0.5, 1, 5, 15, 30, 60, 120, 300, 900],
      registers,
    }),
    pollErrors: new Counter({ name: `${METRIC_PREFIX}poll_errors_total`, help: "Checks of a polled trigger that failed, by trigger type.", labelNames: ["trigger"], registers }),
    smtpMessages: new Counter({ name: `${METRIC_PREFIX}smtp_messages_total`, help: "Inbound SMTP messages by outcome.", labelNames: ["outcome"], registers }),
    alertSends: new Counter({ name: `${METRIC_PREFIX}alert_sends_total`, help: "Failure alerts and recovery notices sent, by outcome (sent, failed).", labelNames: ["outcome"], registers }),
  };
}

const SLOT = Symbol.for("whenthen.process-metrics");
type Slot = { [SLOT]?: ProcessMetrics };

/** This process's metrics (created on first use). */
export function processMetrics(): ProcessMetrics {
  return ((globalThis as Slot)[SLOT] ??= createProcessMetrics());
}

export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/** The process's metrics as JSON text: what a worker's heartbeat stores. */
export async function snapshot(m: ProcessMetrics = processMetrics()): Promise<string> {
  return JSON.stringify(await m.registry.getMetricsAsJSON());
}

/** Parses a stored snapshot; null for one that is not a list of metrics (a row written by an older version). */
export function parseSnapshot(text: string | null): MetricsSnapshot | null {
  if (!text) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) return null;
    return parsed.filter((m: unknown): m is MetricsSnapshot[number] => {
      const o = m as { name?: unknown; values?: unknown } | null;
      return typeof o === "object" && o !== null && typeof o.name === "string" && Array.isArray(o.values);
    });
  } catch {
    return null;
  }
}

/**
 * One registry of every process's counters: each snapshot's series get the label
 * `process="<name>"`, then series of the same name and labels are summed (prom-client's
 * aggregator; with distinct process labels nothing is actually summed).
 */
export function mergeSnapshots(sources: { process: string; metrics: MetricsSnapshot }[]): Registry {
  const labelled = sources.map((s) =>
    s.metrics.map((m) => ({ ...m, aggregator: "sum" as const, values: m.values.map((v) => ({ ...v, labels: { ...v.labels, process: s.process } })) })),
  );
  return AggregatorRegistry.aggregate(labelled);
}

/** Sums a metric of a snapshot over every series matching `labels` (the Settings Health panel). */
export function total(metrics: MetricsSnapshot, name: string, labels: Record<string, string> = {}, metricName = name): number {
  let sum = 0;
  for (const m of metrics) {
    if (m.name !== name) continue;
    for (const v of m.values) {
      if (((v as { metricName?: string }).metricName ?? m.name) !== metricName) continue;
      if (Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want)) sum += v.value;
    }
  }
  return sum;
}
