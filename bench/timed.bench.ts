/**
 * Timed actions, two figures beside a same-run baseline:
 *  1. planning + storing through the webhook: the ingress (bench/servers/ingest.ts, the handler
 *     server.ts mounts, under tsx, no worker running) for applets whose one action runs at once,
 *     then for applets with 3 timed actions each (-24 h, -1 h, +2 h from the booking's start, quiet
 *     hours, a subject per booking): events/s, each event planned by @vibedout/automations and its
 *     3 planned runs (+ their `runs` rows) stored in the event's transaction;
 *  2. a sweep of 10,000 due planned runs (lib/timed/sweep: the library's sweepDue over the store,
 *     claim → enabled / cap / guard → dispatch), in this process: runs/s dispatched to the queue
 *     (the executor's own work is the webhook bench's end-to-end figure).
 * Load: autocannon, 50 connections on loopback, each request a different booking.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { sqliteOf } from "@/lib/db/store/sqlite";
import { checkDefinition } from "@/lib/definition";
import { ManualClock } from "@/lib/core/clock";
import { planTimed } from "@/lib/timed/plan";
import { sweepPlannedRuns } from "@/lib/timed/sweep";
import { freePorts, start, type Proc } from "./processes";
import type { BenchFigure } from "./types";

const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const APPLETS = 20;
const SWEEP_RUNS = Number(process.env.BENCH_SWEEP_RUNS ?? 10_000);

const action = (timing?: Record<string, unknown>) => ({ type: "http", config: { url: "https://example.com/in", method: "POST", body: { booking: "{{trigger.body.booking.id}}" } }, ...(timing ? { timing } : {}) });
const untimed = { version: 1, trigger: { type: "webhook", config: {} }, actions: [action()] };
const timed = {
  version: 1,
  trigger: { type: "webhook", config: {} },
  timezone: "America/Mexico_City",
  actions: [
    action({ at: "-24h", anchor: "trigger.body.booking.starts_at" }),
    action({ at: "-1h", anchor: "trigger.body.booking.starts_at" }),
    action({ at: "2h", anchor: "trigger.body.booking.starts_at" }),
  ],
  timed: {
    subject: { id: "{{trigger.body.booking.id}}", version: "{{trigger.body.booking.version}}", type: "booking" },
    supersede: { path: "trigger.body.event", values: ["booking.rescheduled"] },
    quiet_hours: { start: "21:00", end: "08:00" },
  },
};

export default async function bench(): Promise<BenchFigure[]> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-timed-"));
  const procs: Proc[] = [];
  try {
    const app = createApp({ env: { DATA_DIR: dataDir }, log: silentLogger });
    const service = createAppletService(app);
    const hooks = { untimed: [] as string[], timed: [] as string[] };
    for (let i = 0; i < APPLETS; i++) {
      for (const kind of ["untimed", "timed"] as const) {
        const a = await service.create({ name: `${kind} ${i}`, definition: kind === "timed" ? timed : untimed });
        hooks[kind].push(`/api/hooks/${a.id}/${a.webhookToken}`);
      }
    }
    const [port] = (await freePorts(1)) as [number];
    const ingress = start("bench/servers/ingest.ts", { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "warn", NODE_ENV: "production" }, { tsx: true });
    procs.push(ingress);
    await new Promise<void>((resolve) => ingress.child.once("message", () => resolve()));

    const plainLoad = await load(`http://127.0.0.1:${port}`, hooks.untimed);
    const plannedBefore = count(app, "planned_runs");
    const eventsBefore = count(app, "events");
    const timedLoad = await load(`http://127.0.0.1:${port}`, hooks.timed);
    const planned = count(app, "planned_runs") - plannedBefore;
    const timedEvents = count(app, "events") - eventsBefore;
    await ingress.stop();

    // 10,000 due planned runs: one timed action ("at": "0", anchored at the event) per event.
    const clock = new ManualClock("2026-03-07T12:00:00.000Z");
    const sweepApp = createApp({ env: { DATA_DIR: path.join(dataDir, "sweep") }, log: silentLogger, clock });
    const waitDef = { version: 1, trigger: { type: "webhook", config: {} }, actions: [action({ at: "0", lateness: null })] };
    const waiter = await createAppletService(sweepApp).create({ name: "waits", definition: waitDef });
    const def = checkDefinition(waitDef);
    if (!def.ok) throw new Error(JSON.stringify(def.problems));
    const receivedAt = clock.now().toISOString();
    for (let i = 0; i < SWEEP_RUNS; i += 500) {
      const batch = Array.from({ length: Math.min(500, SWEEP_RUNS - i) }, (_, j) => {
        const eventId = `evt-${i + j}`;
        const plan = planTimed({ appletId: waiter.id, definition: def.definition, payload: { body: { n: i + j } }, eventId, receivedAt: Date.parse(receivedAt), maxAttempts: 5 });
        return { appletId: waiter.id, source: "webhook", dedupeKey: null, payloadJson: JSON.stringify({ body: { n: i + j } }), receivedAt, maxAttempts: 5, eventId, plan: plan.write! };
      });
      await sweepApp.store.runs.ingestMany(batch);
    }
    clock.advance(1000);
    const t0 = performance.now();
    const report = await sweepPlannedRuns({ app: sweepApp, limit: 100 });
    const sweepSeconds = (performance.now() - t0) / 1000;
    const queued = count(sweepApp, "runs", "status = 'queued' AND planned_run_id IS NOT NULL");
    await sweepApp.close();
    await app.close();

    return [
      { name: "ingress, 1 untimed action (same-run baseline), 50 connections", unit: "events/s", value: plainLoad.rps, notes: `p50 ${plainLoad.p50} ms, p99 ${plainLoad.p99} ms, ${plainLoad.non2xx} not 202` },
      {
        name: "ingress, 3 timed actions each: planned + stored in the event's transaction, 50 connections",
        unit: "events/s",
        value: timedLoad.rps,
        notes: `p50 ${timedLoad.p50} ms, p99 ${timedLoad.p99} ms, ${timedLoad.non2xx} not 202; ${timedEvents} events with ${planned} planned runs stored (${(planned / Math.max(1, timedEvents)).toFixed(2)} per event); ${((timedLoad.rps / plainLoad.rps) * 100).toFixed(1)} % of the untimed baseline`,
      },
      {
        name: `sweep of ${SWEEP_RUNS.toLocaleString("en-US")} due planned runs (claim 100 at a time, checks, dispatch to the queue)`,
        unit: "runs/s",
        value: report.done / sweepSeconds,
        notes: `${sweepSeconds.toFixed(1)} s; ${report.claimed} claimed, ${report.done} dispatched, ${report.skipped} skipped, ${report.lost} lost; ${queued} runs queued for the executor (its work not included)`,
      },
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function count(app: ReturnType<typeof createApp>, table: string, where = "1 = 1"): number {
  return (sqliteOf(app.store).prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`).get() as { n: number }).n;
}

/** autocannon round-robin over the paths, every request a different booking (its own subject). */
async function load(base: string, paths: string[]) {
  let n = 0;
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: paths.map((p) => ({
      method: "POST" as const,
      path: p,
      headers: { "content-type": "application/json" },
      setupRequest: (req) => {
        const i = n++;
        const startsAt = new Date(Date.UTC(2027, 0, 10) + (i % 20_000) * 17 * 60_000).toISOString();
        return { ...req, body: JSON.stringify({ event: "booking.created", booking: { id: `b-${i}`, version: 1, starts_at: startsAt } }) };
      },
    })),
  });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, requests: result.requests.total, non2xx: result.non2xx };
}
