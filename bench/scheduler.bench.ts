/**
 * The app's scheduler tick (lib/tick/tick.ts) on a temp SQLite file: every due schedule applet
 * is claimed, polled and ingested (event + queued run) exactly once by one tick. Measured with
 * 10,000 due applets and nothing else stored, then with the same 10,000 due among 100,000 stored:
 * the due query walks trigger_state's next_run_at index, so the second tick should cost about the
 * same as the first.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createApp, type App } from "../lib/app";
import { sqliteOf } from "../lib/db/store/sqlite";
import { ManualClock } from "../lib/core/clock";
import { silentLogger } from "../lib/core/log";
import { runSchedulerTick } from "../lib/tick/tick";
import type { BenchFigure } from "./types";

const NOW = new Date("2026-03-07T12:00:00.000Z");
const DUE = 10_000;

async function seed(app: App, stored: number): Promise<void> {
  const definition = {
    version: 1,
    trigger: { type: "schedule", config: { cron: "*/5 * * * *", timezone: "Europe/Berlin" } },
    actions: [{ type: "http", config: { url: "https://hooks.example.com/x", method: "POST", headers: {}, content_type: "application/json" } }],
  };
  const now = NOW.toISOString();
  await app.store.transaction(async (tx) => {
    for (let i = 0; i < stored; i++) {
      const id = `applet-${String(i).padStart(6, "0")}`;
      await tx.applets.insert({ id, name: `Schedule ${i}`, enabled: true, triggerType: "schedule", definition, webhookToken: `token-${id}-0123456789abcdef`, now });
      // The first DUE are due (slots spread over the last hour); the rest wait up to 30 days.
      const next = i < DUE ? new Date(NOW.getTime() - (i % 3600) * 1000) : new Date(NOW.getTime() + 60_000 + (i % 2_592_000) * 1000);
      await tx.triggerState.setNextRunAt(id, next.toISOString(), now);
    }
  });
}

async function tickOver(stored: number): Promise<{ ms: number; events: number }> {
  const dir = mkdtempSync(join(tmpdir(), "whenthen-bench-scheduler-"));
  const app = createApp({ env: { DATA_DIR: dir }, clock: new ManualClock(NOW), log: silentLogger });
  try {
    await seed(app, stored);
    sqliteOf(app.store).pragma("wal_checkpoint(TRUNCATE)");
    const start = performance.now();
    const result = await runSchedulerTick(app, NOW, { holder: "bench" });
    const ms = performance.now() - start;

    const perApplet = sqliteOf(app.store).prepare<[], { n: number; c: number }>("SELECT COUNT(*) AS n, COUNT(DISTINCT applet_id) AS c FROM events").get()!;
    const runs = sqliteOf(app.store).prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM runs").get()!.n;
    if (!result.ran || result.events !== DUE || result.fired.length !== DUE || perApplet.n !== DUE || perApplet.c !== DUE || runs !== DUE) {
      throw new Error(`bench: expected ${DUE} applets fired once each, got fired=${result.fired.length} events=${perApplet.n} distinct=${perApplet.c} runs=${runs}`);
    }
    const again = await runSchedulerTick(app, NOW, { holder: "bench" });
    if (again.fired.length !== 0 || again.events !== 0) throw new Error(`bench: a second tick fired ${again.fired.length}`);
    return { ms, events: perApplet.n };
  } finally {
    void app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export default async function bench(): Promise<BenchFigure[]> {
  const alone = await tickOver(DUE);
  const among = await tickOver(100_000);
  return [
    {
      name: "scheduler tick: 10,000 due schedule applets, each fired exactly once",
      unit: "ms",
      value: Math.round(alone.ms),
      notes: `${alone.events} events + queued runs; ${Math.round(alone.events / (alone.ms / 1000))} fires/s; a second tick fires none`,
    },
    {
      name: "scheduler tick: 10,000 due among 100,000 stored",
      unit: "ms",
      value: Math.round(among.ms),
      notes: `${among.events} events; the due query reads trigger_state_next_run_idx, so stored-but-not-due rows cost nothing`,
    },
  ];
}
