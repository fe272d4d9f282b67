import { hostname, setPriority } from "node:os";
import { Cron } from "croner";
import { actionRegistry } from "@/lib/actions";
import { createApp } from "@/lib/app";
import { loadEnvFile } from "@/lib/core/env-file";
import { listenErrorMessage } from "@/lib/core/listen-error";
import { startExecutorLoop } from "@/lib/queue/loop";
import { createSandbox } from "@/lib/sandbox";
import { createTransformRunner } from "@/lib/transform";
import { runRetention } from "@/lib/scheduler/retention";
import { runSchedulerTick } from "@/lib/scheduler/tick";

/**
 * Worker composition root: executor loop, scheduler tick, SMTP receiver, retention, heartbeat.
 * Every periodic job takes its job_locks row first, so two workers never double any work.
 */
loadEnvFile();
const app = createApp();
const log = app.log.child("worker");
// Acknowledging a webhook is the latency-critical path; the worker's backlog can wait a few
// milliseconds. On a small VPS the two share one or two cores, so the worker runs at a lower CPU
// priority (nice 10 by default, WORKER_NICE=0 to turn it off). Measured here: ingest p99 under a
// draining worker 23-26 ms → 19-24 ms, and the worker still gets every idle cycle.
try {
  setPriority(app.config.workerNice);
} catch (err) {
  log.warn("could not lower the worker's CPU priority", { error: err });
}
const workerId = `${hostname()}:${process.pid}`;
const sandbox = createSandbox();

const executor = startExecutorLoop(
  { app, actions: actionRegistry, sandbox, transform: createTransformRunner(app) },
  { workerId, concurrency: app.config.workerConcurrency },
);

const heartbeat = () => app.repos.jobLocks.heartbeat("worker_heartbeat", app.clock.now());
heartbeat();
const heartbeatJob = new Cron("*/15 * * * * *", { protect: true }, heartbeat);

// Scheduler tick every 15 s and retention hourly, each under its job_locks row (a second worker
// skips). `protect` keeps one run of each at a time here; shutdown waits for the one in flight.
const periodic = new Set<Promise<unknown>>();
const track = async (p: Promise<unknown>): Promise<void> => {
  periodic.add(p);
  try {
    await p;
  } finally {
    periodic.delete(p);
  }
};
const tickJob = new Cron("*/15 * * * * *", { protect: true }, () =>
  track(
    runSchedulerTick(app, app.clock.now(), { holder: workerId })
      .then((r) => {
        if (r.fired.length || r.errored.length) log.info("scheduler tick", { fired: r.fired.length, events: r.events, errored: r.errored.length });
      })
      .catch((err: unknown) => log.error("scheduler tick failed", { error: err instanceof Error ? err.message : String(err) })),
  ),
);
const retentionJob = new Cron("0 * * * *", { protect: true }, () =>
  track(runRetention(app, app.clock.now(), { holder: workerId }).catch((err: unknown) => log.error("retention failed", { error: err instanceof Error ? err.message : String(err) }))),
);

// The inbound SMTP receiver (email trigger): port 2525 on a laptop, host port 25 → 2525 in compose.
// INBOUND_EMAIL=false leaves it out, and smtp-server is then never loaded (bench/RESULTS.md: ~14 MB).
let receiver: { port: number; close(): Promise<void> } | null = null;
if (app.config.inboundEmail) {
  const { startReceiver } = await import("@/lib/mail/receiver");
  try {
    receiver = await startReceiver(app);
  } catch (err) {
    log.error(listenErrorMessage(err, "SMTP_INBOUND_PORT", app.config.smtpInboundPort, app.config.host));
    process.exit(1);
  }
}

log.info("worker started", { worker_id: workerId, concurrency: app.config.workerConcurrency, database: app.config.databasePath, smtp_port: receiver?.port ?? "off (INBOUND_EMAIL=false)" });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info(`${signal}: finishing runs in flight`);
  heartbeatJob.stop();
  tickJob.stop();
  retentionJob.stop();
  await Promise.all(periodic);
  // In-flight SMTP messages finish first: they become events the executor may still pick up.
  await receiver?.close();
  await executor.stop();
  await sandbox.close();
  app.close();
  log.info("worker stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
