import { hostname } from "node:os";
import { Cron } from "croner";
import { actionRegistry } from "@/lib/actions";
import { createApp } from "@/lib/app";
import { startExecutorLoop } from "@/lib/queue/loop";
import { createSandbox } from "@/lib/sandbox";

/**
 * Worker composition root: executor loop, scheduler tick, SMTP receiver, retention, heartbeat.
 * Every periodic job takes its job_locks row first, so two workers never double any work.
 */
const app = createApp();
const log = app.log.child("worker");
const workerId = `${hostname()}:${process.pid}`;
const sandbox = createSandbox();

const executor = startExecutorLoop(
  { app, actions: actionRegistry, sandbox },
  { workerId, concurrency: app.config.workerConcurrency },
);

const heartbeat = () => app.repos.jobLocks.heartbeat("worker_heartbeat", app.clock.now());
heartbeat();
const heartbeatJob = new Cron("*/15 * * * * *", { protect: true }, heartbeat);

log.info("worker started", { worker_id: workerId, concurrency: app.config.workerConcurrency, database: app.config.databasePath });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info(`${signal}: finishing runs in flight`);
  heartbeatJob.stop();
  await executor.stop();
  await sandbox.close();
  app.close();
  log.info("worker stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
