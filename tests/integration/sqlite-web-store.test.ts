import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, test } from "vitest";
import { createApp, type App } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { ManualClock } from "@/lib/core/clock";
import { silentLogger } from "@/lib/core/log";
import { storedDefinition } from "@/lib/definition";
import type { IngestInput } from "@/lib/db/store";
import { alertPolicy } from "@/lib/alerts/policy";
import { openSqliteStore, sqliteOf } from "@/lib/db/store/sqlite";
import { createIngestBatcher } from "@/lib/queue/ingest";

/**
 * The SQLite store as the web process opens it (role "web"): webhooks are inserted by a thread with
 * a connection of its own (lib/db/store/sqlite/ingest-thread.ts), and each webhook's applet row is
 * kept per process, checked against a counter the database's triggers move
 * (lib/db/store/sqlite/hook-cache.ts, drizzle/0013). Real files, real second connections.
 */
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function webApp(): App & { dataDir: string } {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-webstore-"));
  const app = createApp({ env: { DATA_DIR: dataDir }, clock: new ManualClock("2026-03-07T12:00:00.000Z"), log: silentLogger, role: "web" });
  cleanups.push(async () => {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return Object.assign(app, { dataDir });
}

const ACTION = { type: "http", config: { url: "https://example.test/in", method: "POST" } };
async function hookApplet(app: App, definition: Record<string, unknown> = { version: 1, trigger: { type: "webhook", config: {} }, actions: [ACTION] }) {
  return createAppletService(app).create({ name: "hook", definition });
}

const input = (appletId: string, n: number, dedupeKey: string | null = null): IngestInput => ({
  appletId,
  source: "webhook",
  dedupeKey,
  payloadJson: JSON.stringify({ n }),
  receivedAt: new Date(Date.UTC(2026, 2, 7, 12, 0, 0, n)).toISOString(),
  maxAttempts: 5,
});

/**
 * A second connection to the file, as another process has: no gate, no cache, no store. Its raw
 * SQL is the subject here (what another process's write does to this one's triggers and cache).
 */
function otherProcess(app: App & { dataDir: string }): Database.Database {
  const db = new Database(path.join(app.dataDir, "app.db"));
  db.pragma("busy_timeout = 5000");
  cleanups.push(() => void db.close());
  return db;
}

const nextTurn = () => new Promise((r) => setImmediate(r));

describe("webhooks inserted by the web process's ingest thread", () => {
  test("same answers as on the connection: ids, null for a taken dedupe key (also within one batch), a row of a deleted applet failing alone", async () => {
    const app = webApp();
    const a = await hookApplet(app);
    const results = await app.store.runs.ingestMany([input(a.id, 1, "k1"), input(a.id, 2, "k1"), input("no-such-applet", 3), input(a.id, 4)]);
    expect(results[0]).toMatchObject({ eventId: expect.any(String), runId: expect.any(String) });
    expect(results[1]).toBeNull();
    expect(results[2]).toBeInstanceOf(Error);
    expect((results[2] as Error & { code?: string }).code).toMatch(/^SQLITE_CONSTRAINT/);
    expect(results[3]).toMatchObject({ runId: expect.any(String) });
    // Committed by the thread, read on the store's own connection at once.
    const first = results[0] as { runId: string; eventId: string };
    expect(await app.store.runs.get(first.runId)).toMatchObject({ status: "queued", appletId: a.id, eventId: first.eventId });
    expect(await app.store.runs.firstOfDedupeKey(a.id, "k1")).toEqual({ eventId: first.eventId, runId: first.runId });
    expect(await app.store.runs.ingestMany([input(a.id, 5, "k1")])).toEqual([null]);
    expect((await app.store.runs.list({})).runs).toHaveLength(2);
  });

  test("batches arriving while one is in the thread are committed together, each caller gets its own rows' answers", async () => {
    const app = webApp();
    const a = await hookApplet(app);
    const calls = Array.from({ length: 40 }, (_, i) => app.store.runs.ingestMany([input(a.id, 2 * i, `d${i}`), input(a.id, 2 * i + 1, `d${i}`)]));
    const answers = await Promise.all(calls);
    for (const pair of answers) {
      expect(pair[0]).toMatchObject({ runId: expect.any(String) });
      expect(pair[1]).toBeNull();
    }
    // Oldest first, as received.
    const stored = await Promise.all((await app.store.runs.recentEvents(a.id, 100)).reverse().map(async (e) => (await app.store.runs.event(e.id))!));
    expect(stored.map((e) => e.dedupeKey)).toEqual(Array.from({ length: 40 }, (_, i) => `d${i}`));
    expect(stored.map((e) => e.payload.n)).toEqual(Array.from({ length: 40 }, (_, i) => 2 * i));
  });

  test("while another process holds the write lock the event loop keeps turning, and the webhooks commit once it is free", async () => {
    const app = webApp();
    const a = await hookApplet(app);
    const other = otherProcess(app);
    other.exec("BEGIN IMMEDIATE");
    let settled = false;
    const pending = app.store.runs.ingestMany([input(a.id, 1)]).then((r) => ((settled = true), r));
    // On the connection itself the insert would wait in busy_timeout with the whole process stopped.
    const turnedAt = performance.now();
    await new Promise((r) => setTimeout(r, 50));
    expect(performance.now() - turnedAt).toBeLessThan(1000);
    expect(settled).toBe(false);
    other.exec("COMMIT");
    expect((await pending)[0]).toMatchObject({ runId: expect.any(String) });
  });

  test("an event that plans timed actions is stored on the connection with its planned runs", async () => {
    const app = webApp();
    const a = await hookApplet(app, {
      version: 1,
      trigger: { type: "webhook", config: {} },
      actions: [{ type: "http", config: { url: "https://example.test/" }, timing: { at: "-1h", anchor: "trigger.body.starts_at" } }],
    });
    const ingestBatched = createIngestBatcher(app);
    const definition = storedDefinition((await app.store.applets.get(a.id))!.definition);
    const r = await ingestBatched({ appletId: a.id, source: "webhook", dedupeKey: null, payload: { body: { starts_at: "2026-03-09T12:00:00Z" } }, maxAttempts: 5, definition });
    expect(r).toMatchObject({ runId: expect.any(String) });
    expect(await app.store.plannedRuns.list(a.id, { limit: 5 })).toHaveLength(1);
  });

  test("an event of an applet with controls over runs is stored on the connection with its lane and rate-limit slot", async () => {
    const app = webApp();
    const a = await hookApplet(app, {
      version: 2,
      trigger: { type: "webhook", config: {} },
      steps: [ACTION],
      controls: { concurrency: { mode: "per_key", key: "{{trigger.body.customer}}" }, rate_limit: { max: 1, period_seconds: 60 } },
    });
    const ingestBatched = createIngestBatcher(app);
    const definition = storedDefinition((await app.store.applets.get(a.id))!.definition);
    for (const customer of ["c1", "c2"]) await ingestBatched({ appletId: a.id, source: "webhook", dedupeKey: null, payload: { body: { customer } }, maxAttempts: 5, definition });
    // The lane is the store's own (no method hands it out): read from its column.
    const runs = sqliteOf(app.store).prepare("SELECT lane, next_attempt_at FROM runs ORDER BY lane").all();
    expect(runs).toEqual([
      { lane: "k:c1", next_attempt_at: "2026-03-07T12:00:00.000Z" },
      { lane: "k:c2", next_attempt_at: "2026-03-07T12:01:00.000Z" },
    ]);
  });

  test("closing the store waits for the batch in the thread: what was answered is in the file", async () => {
    const app = webApp();
    const a = await hookApplet(app);
    const pending = app.store.runs.ingestMany(Array.from({ length: 200 }, (_, i) => input(a.id, i)));
    const closing = app.close();
    const results = await pending;
    await closing;
    const reopened = openSqliteStore({ file: path.join(app.dataDir, "app.db"), alertPolicy });
    cleanups.push(() => reopened.close());
    expect(results.every((r) => r !== null && !(r instanceof Error))).toBe(true);
    const stored = await reopened.runs.list({ limit: 200 });
    expect({ n: stored.runs.length, more: stored.nextCursor }).toEqual({ n: 200, more: null });
    await expect(app.store.runs.ingestMany([input(a.id, 1)])).rejects.toThrow();
  });
});

describe("each webhook's applet row, kept per process", () => {
  test("a change by another process (the worker's auto-pause, a second web process) is seen from the next turn of the event loop", async () => {
    const app = webApp();
    const a = await hookApplet(app);
    expect(await app.store.applets.forHook(a.id)).toMatchObject({ enabled: true });
    const other = otherProcess(app);
    other.prepare("UPDATE applets SET enabled = 0 WHERE id = ?").run(a.id);
    await nextTurn();
    expect(await app.store.applets.forHook(a.id)).toMatchObject({ enabled: false });
    other.prepare("UPDATE applets SET webhook_token = 'rotated' WHERE id = ?").run(a.id);
    await nextTurn();
    expect(await app.store.applets.forHook(a.id)).toMatchObject({ webhookToken: "rotated" });
    other.prepare("DELETE FROM applets WHERE id = ?").run(a.id);
    await nextTurn();
    expect(await app.store.applets.forHook(a.id)).toBeNull();
  });

  test("this process's own writes apply at once, in the same turn", async () => {
    const app = webApp();
    const a = await hookApplet(app);
    expect(await app.store.applets.forHook(a.id)).toMatchObject({ enabled: true });
    await createAppletService(app).setEnabled(a.id, false);
    expect(await app.store.applets.forHook(a.id)).toMatchObject({ enabled: false });
    // A second store on the file in this process (tests play two workers so) tells this one too.
    const peer = openSqliteStore({ file: path.join(app.dataDir, "app.db"), alertPolicy });
    cleanups.push(() => peer.close());
    await peer.applets.setEnabled(a.id, true, new Date().toISOString());
    expect(await app.store.applets.forHook(a.id)).toMatchObject({ enabled: true });
    await app.store.transaction(async (tx) => {
      await tx.applets.setListening(a.id, "2026-03-07T12:05:00.000Z");
    });
    expect(await app.store.applets.forHook(a.id)).toMatchObject({ listenUntil: "2026-03-07T12:05:00.000Z" });
  });

  test("the row is read once while nothing changes: a column written behind the triggers' back is not seen until the counter moves", async () => {
    const app = webApp();
    const a = await hookApplet(app);
    const before = (await app.store.applets.forHook(a.id))!.definition;
    const other = otherProcess(app);
    // Counts and times of runs change all the time and are not the webhook's: they move nothing.
    other.prepare("UPDATE applets SET run_count = run_count + 1, last_fired_at = 'x' WHERE id = ?").run(a.id);
    other.exec("DROP TRIGGER applets_hook_changed");
    other.prepare("UPDATE applets SET definition = '{}' WHERE id = ?").run(a.id);
    await nextTurn();
    expect((await app.store.applets.forHook(a.id))!.definition).toBe(before);
    other.exec("UPDATE hook_changes SET n = n + 1");
    await nextTurn();
    expect((await app.store.applets.forHook(a.id))!.definition).toBe("{}");
  });
});
