import { setPriority } from "node:os";
import { Cron } from "croner";
import { actionRegistry } from "@/lib/actions";
import { createApp, waitForStore, type App } from "@/lib/app";
import { systemClock } from "@/lib/core/clock";
import { loadEnvFile } from "@/lib/core/env-file";
import { isDatabaseError } from "@/lib/core/errors";
import { createFaultTracker } from "@/lib/core/faults";
import { listenErrorMessage } from "@/lib/core/listen-error";
import { createLogger } from "@/lib/core/log";
import { collectWhenQuiet } from "@/lib/core/quiet-gc";
import type { Receiver } from "@/lib/mail/receiver";
import { snapshot } from "@/lib/metrics";
import { newWorkerId } from "@/lib/queue/lease";
import { startExecutorLoop } from "@/lib/queue/loop";
import { QUEUE_VACUUM_EVERY_MS, createQueueVacuum } from "@/lib/queue/vacuum";
import { createSandbox } from "@/lib/sandbox";
import { createTransformRunner } from "@/lib/transform";
import { runRetention } from "@/lib/tick/retention";
import { runSchedulerTick } from "@/lib/tick/tick";
import { startTimedSweeper } from "@/lib/timed/sweep";
import { dispatchAlerts } from "@/lib/alerts/dispatch";
import { checkQuiet, QUIET_CHECK_MS } from "@/lib/fires/check";
import { LISTEN_RECONCILE_MS, createListeners } from "@/lib/listeners";

/**
 * Worker composition root: executor loop (with the heartbeat that renews this worker's lease),
 * scheduler tick, SMTP receiver, held trigger connections (IMAP, MQTT), retention. Every periodic job takes its job_locks row first, so
 * two workers never double any work. A job that fails (a full disk) is a fault: logged, carried
 * by the heartbeat to /api/health when it can be written, and tried again; the process stays up.
 */
loadEnvFile();
const log = createLogger("whenthen").child("worker");
const faults = createFaultTracker({ clock: systemClock, log });
// A database that cannot be opened (a full disk cannot even grow its -shm file) is waited out
// with back-off rather than exited on: a restart would meet the same disk.
async function openApp(): Promise<App> {
  for (;;) {
    try {
      const app = createApp();
      faults.succeeded("opening the database");
      return app;
    } catch (err) {
      if (!isDatabaseError(err)) throw err;
      const wait = faults.failed("opening the database", err);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
const app = await openApp();
// PostgreSQL migrates and checks SECRETS_KEY / SESSION_SECRET against the database first; a
// worker with another key would store secrets no other host can read, so it stops here instead.
// A server that is away or refuses the login is waited for (one line per attempt, back-off), not
// exited on.
try {
  await waitForStore({ ...app, log });
} catch (err) {
  log.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
// Acknowledging a webhook is the latency-critical path; the worker's backlog can wait a few
// milliseconds. On a small VPS the two share one or two cores, so the worker runs at a lower CPU
// priority (nice 10 by default, WORKER_NICE=0 to turn it off). Measured here: ingest p99 under a
// draining worker 23-26 ms → 19-24 ms, and the worker still gets every idle cycle.
try {
  setPriority(app.config.workerNice);
} catch (err) {
  log.warn("could not lower the worker's CPU priority", { error: err });
}
const workerId = newWorkerId();
const sandbox = createSandbox();

// Where the store announces claimable runs (PostgreSQL LISTEN/NOTIFY, to workers that say they
// have an idle slot: lib/queue/wakeups.ts, started by the loop), idle slots sleep until woken and
// look on their own only every 5 s (the safety net, and runs whose retry time came); on SQLite
// they look every 500 ms.
// The inbound SMTP receiver, started below; the heartbeat reports its port.
let receiver: Receiver | null = null;
const executor = startExecutorLoop(
  { app, actions: actionRegistry, sandbox, transform: createTransformRunner(app) },
  {
    workerId,
    concurrency: app.config.workerConcurrency,
    leaseMs: app.config.workerLeaseMs,
    faults,
    idleMs: app.store.notifications ? 5_000 : undefined,
    // The heartbeat says whether this worker's SMTP receiver listens (the web's banner reads it) and
    // carries this process's counters to GET /metrics.
    report: async () => ({ smtpPort: receiver?.listening() ? receiver.port : null, metrics: await snapshot() }),
  },
);

// Timed actions: due planned runs are checked and dispatched to the executor every
// second; a dispatched run is an ordinary queued run from there on.
const sweeper = startTimedSweeper({
  app,
  intervalMs: 1_000,
  onDispatched: () => executor.wake(),
  onError: (err) => faults.failed("sweeping timed runs", err),
  onSwept: () => faults.succeeded("sweeping timed runs"),
});

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
// SIGTERM aborts the tick's requests (a slow feed must not hold the shutdown).
const tickAbort = new AbortController();
const tickJob = new Cron("*/15 * * * * *", { protect: true }, () =>
  track(
    runSchedulerTick(app, app.clock.now(), { holder: workerId, signal: tickAbort.signal })
      .then((r) => {
        faults.succeeded("scheduler tick");
        if (r.fired.length || r.errored.length) log.info("scheduler tick", { fired: r.fired.length, events: r.events, errored: r.errored.length });
      })
      .catch((err: unknown) => void faults.failed("scheduler tick", err)),
  ),
);
const retentionJob = new Cron("0 * * * *", { protect: true }, () =>
  track(
    runRetention(app, app.clock.now(), { holder: workerId })
      .then(() => faults.succeeded("retention"))
      .catch((err: unknown) => void faults.failed("retention", err)),
  ),
);
// PostgreSQL: the queue's indexes are vacuumed as runs leave it, by one worker at a time (a claim
// otherwise reads past every run processed since autovacuum last came by; lib/queue/vacuum.ts).
const queueVacuum = createQueueVacuum(app, workerId);
const vacuumJob =
  queueVacuum &&
  new Cron(`*/${QUEUE_VACUUM_EVERY_MS / 1000} * * * * *`, { protect: true }, () =>
    track(
      queueVacuum()
        .then(() => faults.succeeded("vacuuming the queue"))
        .catch((err: unknown) => void faults.failed("vacuuming the queue", err)),
    ),
  );

// The inbound SMTP receiver (email trigger): port 2525 on a laptop, host port 25 → 2525 in compose.
// INBOUND_EMAIL=false leaves it out, and smtp-server is then never loaded (bench/RESULTS.md: ~14 MB).
if (app.config.inboundEmail) {
  const { startReceiver } = await import("@/lib/mail/receiver");
  try {
    receiver = await startReceiver(app);
    // Say so now rather than at the next heartbeat: the web's banner would call it not listening.
    void executor.lease.keep({ force: true, fresh: true });
  } catch (err) {
    log.error(listenErrorMessage(err, "SMTP_INBOUND_PORT", app.config.smtpInboundPort, app.config.host));
    process.exit(1);
  }
}

let stopping = false;

// Held connections (IMAP mailboxes, MQTT subscriptions): every 5 s this worker takes the enabled
// applets nobody listens for (each under its own job lock, so of several workers one holds it),
// renews its locks, and restarts or ends connections whose applet changed.
const listeners = createListeners(app, { holder: workerId });
const listenersTimer = setInterval(() => {
  if (stopping) return;
  void listeners
    .reconcile()
    .then(() => faults.succeeded("holding trigger connections"))
    .catch((err: unknown) => void faults.failed("holding trigger connections", err));
}, LISTEN_RECONCILE_MS);
listenersTimer.unref();
void listeners.reconcile().catch((err: unknown) => void faults.failed("holding trigger connections", err));

// Alerts: every ALERT_DISPATCH_MS (5 s) under the `alerts` job lock; one pass at a time.
let alertsBusy = false;
let lastQuietCheck = 0;
const alertsTimer = setInterval(() => {
  if (alertsBusy || stopping) return;
  alertsBusy = true;
  // Expected activity: applets gone quiet (or back) record their alert first, so it goes out in this pass.
  const quietDue = app.clock.now().getTime() - lastQuietCheck >= QUIET_CHECK_MS;
  if (quietDue) lastQuietCheck = app.clock.now().getTime();
  void track(
    (quietDue ? checkQuiet(app).then(() => faults.succeeded("checking expected activity"), (err: unknown) => void faults.failed("checking expected activity", err)) : Promise.resolve())
      .then(() => dispatchAlerts(app, { holder: workerId }))
      .then((r) => {
        faults.succeeded("sending alerts");
        if (r && (r.sent.length || r.failed.length)) log.info("alerts", { sent: r.sent.length, failed: r.failed.length, folded: r.folded });
      })
      .catch((err: unknown) => void faults.failed("sending alerts", err))
      .finally(() => (alertsBusy = false)),
  );
}, app.config.alertDispatchMs);
alertsTimer.unref();

async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  const graceMs = app.config.workerShutdownMs;
  log.info(`${signal}: no new runs; finishing the ones in flight (at most ${graceMs / 1000} s)`);
  // Claiming stops first, at once: nothing new starts while the rest winds down.
  const executorStopped = executor.stop({ graceMs });
  const sweeperStopped = sweeper.stop();
  tickJob.stop();
  retentionJob.stop();
  vacuumJob?.stop();
  clearInterval(alertsTimer);
  clearInterval(listenersTimer);
  quietGc.stop();
  tickAbort.abort();
  // The tick (aborted), in-flight SMTP messages and runs finish side by side within the grace. A
  // message still arriving at its end is cut; its sender retries it later.
  const deadline = new Promise<void>((r) => setTimeout(r, graceMs).unref());
  await Promise.all([executorStopped, sweeperStopped, Promise.race([Promise.all(periodic), deadline]), Promise.race([receiver?.close(), deadline]), Promise.race([listeners.stop(), deadline])]);
  await sandbox.close();
  await app.close();
  log.info("worker stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
// Started by the launcher (`pnpm start`, `pnpm dev`: lib/launcher), the worker stops when it goes:
// the IPC channel closes however the launcher ended, SIGKILL included. The pipe that carried the
// log may be gone by then, which must not turn the stop into a crash.
if (process.send) {
  process.once("disconnect", () => void shutdown("launcher gone"));
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});
}
// Start-up grew the young generation; it is given back once things are quiet (and after each busy stretch).
const quietGc = collectWhenQuiet();
// Said last, once SIGTERM is handled: a supervisor (or a test) that stops the worker as soon as it
// reads this line gets a clean shutdown, never the default action of a signal with no handler.
log.info("worker started", {
  worker_id: workerId,
  concurrency: app.config.workerConcurrency,
  lease_s: app.config.workerLeaseMs / 1000,
  database: app.config.postgres ? `postgres (${app.store.engine})` : app.config.databasePath,
  smtp_port: receiver?.port ?? "off (INBOUND_EMAIL=false)",
});
