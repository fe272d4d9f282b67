import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createApp, type App } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { ManualClock } from "@/lib/core/clock";
import { createLogger, silentLogger, type Logger } from "@/lib/core/log";
import type { AlertRow, Run, Store, StoredEvent } from "@/lib/db/store";
import { createSafeFetch, isPublicAddress } from "@/lib/net/safe-fetch";
import { sqliteEngine, testSql, type TestEngine, type TestSql } from "./engines";

export interface TestApp extends App {
  clock: ManualClock;
  dataDir: string;
  applets: ReturnType<typeof createAppletService>;
  /** The engine under this app's store (SQLite unless a suite runs per engine). */
  engine: TestEngine;
  /** Raw SQL on its store, for assertions no store method answers (tests/helpers/engines). */
  sql: TestSql;
  /** Closes the database and removes the temp folder. */
  cleanup(): Promise<void>;
}

/**
 * Mocked hosts do not resolve offline: DNS answers with a documentation address (TEST-NET-1) that
 * stands in for the public internet, and msw answers before any socket connects to it. Every other
 * address is still classified for real, so the SSRF rule stays on in tests.
 */
export const offlineLookup = async () => [{ address: "192.0.2.1", family: 4 }];
export const offlineClassify = (ip: string) => ip === "192.0.2.1" || isPublicAddress(ip);
export const testFetch = (allowPrivate = false) => createSafeFetch({ allowPrivate, lookup: offlineLookup, classify: offlineClassify });

/**
 * A real database in a fresh temp DATA_DIR (migrations applied: a SQLite file by default, or the
 * store of `engine`), a manual clock, and the real safe fetch (msw intercepts its requests at the
 * boundary). One per test file or per test.
 */
export function createTestApp(
  opts: {
    env?: Record<string, string>;
    start?: string;
    dataDir?: string;
    log?: Logger;
    engine?: TestEngine;
    /** A second app on the same database (another worker): its own connection, the same DATA_DIR. */
    peerOf?: TestApp;
  } = {},
): TestApp {
  const engine = opts.peerOf?.engine ?? opts.engine ?? sqliteEngine;
  if (opts.peerOf) opts = { ...opts, dataDir: opts.peerOf.dataDir };
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), "whenthen-test-"));
  const clock = new ManualClock(opts.start ?? "2026-03-07T12:00:00.000Z");
  const app = createApp({
    env: { DATA_DIR: dataDir, ...opts.env },
    clock,
    log: opts.log ?? silentLogger,
    http: testFetch(opts.env?.ALLOW_PRIVATE_URLS === "true"),
    // The default engine opens what the config names (DATA_DIR/app.db, or DATABASE_URL in env).
    store: opts.peerOf ? engine.peer(opts.peerOf.store) : opts.engine ? engine.open(dataDir) : undefined,
  });
  return {
    ...app,
    clock,
    dataDir,
    applets: createAppletService(app),
    engine,
    sql: testSql(app.store),
    async cleanup() {
      await app.close();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A definition with one http action, for tests that need an applet and do not care about its trigger. */
export function webhookToHttp(url: string, extra: Record<string, unknown> = {}) {
  return {
    version: 1,
    trigger: { type: "webhook", config: {} },
    actions: [{ type: "http", config: { url, method: "POST", body: { title: "{{trigger.body.title}}" } } }],
    ...extra,
  };
}

/** A logger that keeps every line (all levels), for tests that check what reaches the log. */
export function captureLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger("test", "debug", (line) => lines.push(line)), lines };
}

/**
 * Every event of an applet, oldest first (received_at, then id: event ids are UUIDv7, so within one
 * received_at they sort in creation order), through the store: what a test reads instead of SQL.
 */
export async function eventsOf(store: Store, appletId: string, max = 10_000): Promise<StoredEvent[]> {
  const recent = (await store.runs.recentEvents(appletId, max)).reverse();
  return Promise.all(recent.map(async (e) => (await store.runs.event(e.id))!));
}

/** Every event of every applet (events go with their applet), applet by applet, through the store. */
export async function allEventsOf(store: Store): Promise<StoredEvent[]> {
  const applets = await store.applets.list();
  return (await Promise.all(applets.map((a) => eventsOf(store, a.id)))).flat();
}

/** Every run of an applet (or of every applet), oldest first (created_at, then id), through the store's pages. */
export async function runsOf(store: Store, appletId?: string): Promise<Run[]> {
  const runs: Run[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.runs.list({ appletId, cursor, limit: 200 });
    runs.push(...page.runs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return runs.reverse();
}

/**
 * The queue at `now`, from the store's tally (one snapshot on every engine): how many runs are
 * running over every applet, and whether a queued run is due (a retry set for later is not).
 */
export async function queueAt(store: Store, now: Date): Promise<{ running: number; due: boolean }> {
  // The tally counts every queued and running run whatever its age; a `since` after every run adds no others.
  const { byApplet, oldestDueAt } = await store.runs.tally("9999-12-31T00:00:00.000Z", now);
  return { running: byApplet.filter((t) => t.status === "running").reduce((n, t) => n + t.count, 0), due: oldestDueAt !== null };
}

/** How many runs are running now, over every applet, from the store's tally of the queue. */
export async function runningCount(store: Store, now: Date): Promise<number> {
  return (await queueAt(store, now)).running;
}

/** An applet's alerts, oldest first (created_at, then id), folded ones left out (as the Alerts page lists them), through the store. */
export async function alertsOf(store: Store, appletId: string, max = 1_000): Promise<AlertRow[]> {
  return (await store.alerts.recent(max)).filter((a) => a.appletId === appletId).reverse();
}
