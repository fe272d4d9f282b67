import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { createApp, type App } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { ManualClock } from "@/lib/core/clock";
import { silentLogger, type Logger } from "@/lib/core/log";
import { checkpointDue, startWalCheckpointer } from "@/lib/db/store/sqlite/checkpoint";
import { JOURNAL_SIZE_LIMIT_BYTES } from "@/lib/db/store/sqlite/client";
import { createIngress } from "@/lib/http/ingress";
import { captureLog, createTestApp, runsOf, testFetch, webhookToHttp } from "../helpers/db";
import { isSmallDisk, mountSmallDisk } from "../helpers/full-disk";
import { until } from "../helpers/wait";
import { sqliteOf } from "@/lib/db/store/sqlite";

/**
 * The web process checkpoints the WAL on a size and a time bound, in a thread of its
 * own, and the file shrinks back to journal_size_limit. No msw here: the test talks to a real
 * ingress and nothing outside is called (no worker runs).
 */
const disk = mountSmallDisk(8);
afterAll(() => {
  if (isSmallDisk(disk)) disk.cleanup();
});
const noDisk = isSmallDisk(disk) ? false : disk.unavailable;

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  if (isSmallDisk(disk)) disk.free();
});
let appCount = 0;

/** The lean ingress on an ephemeral port, as server.ts mounts it. */
async function ingressServer(app: App): Promise<string> {
  const ingress = createIngress(app);
  const srv = createServer((req, res) => {
    if (!ingress(req, res)) {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise<void>((r) => srv.close(() => r())));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

/** A web-process app (role "web": WAL checkpoints in their own thread) in a fresh temp folder. */
function webApp(opts: { dataDir?: string; log?: Logger } = {}): App & { dataDir: string; clock: ManualClock } {
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), "whenthen-web-"));
  const clock = new ManualClock("2026-03-07T12:00:00.000Z");
  const app = createApp({ env: { DATA_DIR: dataDir }, clock, log: opts.log ?? silentLogger, http: testFetch(), role: "web" });
  cleanups.push(() => {
    void app.close();
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return Object.assign(app, { dataDir, clock });
}

/** WAL frames already copied back into the database file (a NOOP checkpoint only reads the counters). */
const walCounters = (app: App) => (sqliteOf(app.store).pragma("wal_checkpoint(NOOP)") as { log: number; checkpointed: number }[])[0]!;
const backfilled = (app: App): number => walCounters(app).checkpointed;

/** Frames in the WAL since it last started over. */
const frames = (app: App): number => walCounters(app).log;

const walBytes = (app: App) => {
  try {
    return statSync(`${app.config.databasePath}-wal`).size;
  } catch {
    return 0;
  }
};

/** A webhook applet on the lean ingress, and a POST of a 16 KB body to it. */
async function bigHook(app: App, name: string) {
  const applet = await createAppletService(app).create({ name, definition: webhookToHttp("https://sink.test/hook") });
  const url = `${await ingressServer(app)}/api/hooks/${applet.id}/${applet.webhookToken}`;
  const body = JSON.stringify({ title: "x".repeat(16_000) });
  const post = () => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { applet, url, post };
}

/**
 * A reader holding one snapshot (a backup, a long export): no checkpoint can copy past it, so the
 * WAL grows until it is released.
 */
function holdSnapshot(app: App): () => void {
  const reader = new Database(app.config.databasePath, { readonly: true });
  reader.exec("BEGIN");
  reader.prepare("SELECT COUNT(*) FROM applets").get();
  return () => {
    reader.exec("COMMIT");
    reader.close();
  };
}

describe("the WAL is checkpointed on a size and time bound", () => {
  test("with the worker down a burst of webhooks keeps being answered, and the WAL is checkpointed and cut back to journal_size_limit", async () => {
    const app = webApp();
    const { applet, url, post } = await bigHook(app, "burst");
    const statuses: number[] = [];
    let maxWal = 0;
    // The snapshot is held for the whole burst: the WAL grows beyond journal_size_limit.
    const release = holdSnapshot(app);
    // 8 at a time, with no worker, until the WAL is past the limit (about 2,500 webhooks of 16 KB).
    let sent = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (walBytes(app) <= JOURNAL_SIZE_LIMIT_BYTES + 4 * 1024 * 1024 && sent < 20_000) {
          sent++;
          const res = await post();
          statuses.push(res.status);
          await res.arrayBuffer();
          maxWal = Math.max(maxWal, walBytes(app));
        }
      }),
    );
    release();
    expect(statuses.filter((s) => s !== 202)).toEqual([]);
    expect(await runsOf(app.store, applet.id)).toHaveLength(sent);
    expect(maxWal).toBeGreaterThan(JOURNAL_SIZE_LIMIT_BYTES);
    // Shortly after, the WAL file is back at journal_size_limit: checkpointed by the thread, then
    // started over (and cut) by the next webhook's commit.
    const t0 = Date.now();
    for (;;) {
      const res = await fetch(url, { method: "POST", body: "{}" });
      expect(res.status).toBe(202);
      await res.arrayBuffer();
      if (walBytes(app) <= JOURNAL_SIZE_LIMIT_BYTES) break;
      if (Date.now() - t0 > 15_000) throw new Error(`the WAL is still ${walBytes(app)} bytes`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(sqliteOf(app.store).pragma("journal_size_limit", { simple: true })).toBe(JOURNAL_SIZE_LIMIT_BYTES);
  }, 120_000);

  test("a WAL below the size bound is still checkpointed once the time bound has passed", async () => {
    const app = createTestApp();
    cleanups.push(() => app.cleanup());
    sqliteOf(app.store).pragma("wal_autocheckpoint = 0");
    const checkpointer = startWalCheckpointer({ file: app.config.databasePath, log: silentLogger, clock: app.clock, maxWalBytes: 1024 ** 3, maxAgeMs: 30_000, checkEveryMs: 5 });
    cleanups.push(() => checkpointer.stop());
    const applet = await app.applets.create({ name: "trickle", definition: webhookToHttp("https://sink.test/hook") });
    for (let n = 0; n < 20; n++) (await app.applets.test(applet.id, { body: { n } }));
    const framesBefore = frames(app);
    expect(framesBefore).toBeGreaterThan(0);
    // Not yet 30 s: nothing copied back.
    app.clock.advance(29_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(backfilled(app)).toBe(0);
    app.clock.advance(1_000);
    await until(() => backfilled(app) === framesBefore, "the time-bound checkpoint");
  });

  test("checkpointDue fires past either bound when frames wait to be copied back, and never with none", () => {
    const bounds = { maxWalBytes: 8_000_000, maxAgeMs: 30_000 };
    const s = { pendingBytes: 1_000, nowMs: 10_000, lastAtMs: 0 };
    expect(checkpointDue(s, bounds)).toBe(false);
    expect(checkpointDue({ ...s, nowMs: 30_000 }, bounds)).toBe(true);
    expect(checkpointDue({ ...s, pendingBytes: 9_000_000 }, bounds)).toBe(true);
    expect(checkpointDue({ ...s, pendingBytes: 0, nowMs: 60_000 }, bounds)).toBe(false);
  });

  test("the size bound fires on the frames added since the last checkpoint, also inside a WAL file that kept its size when it started over", async () => {
    const app = webApp();
    const { post } = await bigHook(app, "bursts");
    const send = async (count: number) => {
      for (let i = 0; i < count; i++) {
        const res = await post();
        expect(res.status).toBe(202);
        await res.arrayBuffer();
      }
    };
    // A WAL file of about 24 MB (a reader held the checkpoints back), then copied back and started over.
    const release = holdSnapshot(app);
    while (walBytes(app) < 24 * 1024 * 1024) await send(50);
    release();
    const fileBytes = walBytes(app);
    await until(() => backfilled(app) === frames(app), "the thread's checkpoint to copy the WAL back", 15_000);
    // The next commit starts the WAL over, at the start of the same file.
    await send(1);
    expect(frames(app)).toBeLessThan(100);
    expect(walBytes(app)).toBe(fileBytes);
    expect(backfilled(app)).toBe(0);
    // About 13 MB more (one commit each: ~21 frames): inside the file, which keeps its size, and past the 8 MB bound.
    await send(150);
    expect(walBytes(app)).toBe(fileBytes);
    await until(() => backfilled(app) > 0, "a checkpoint of the new frames", 10_000);
  }, 120_000);

  test.skipIf(noDisk)("a webhook the full disk cannot store is answered 503 with Retry-After; stored again once space is back", async () => {
    if (!isSmallDisk(disk)) return;
    const dataDir = path.join(disk.dir, `web-${++appCount}`);
    mkdirSync(dataDir);
    const { log, lines } = captureLog();
    const app = webApp({ dataDir, log });
    const applet = await createAppletService(app).create({ name: "hook", definition: webhookToHttp("https://sink.test/hook") });
    const url = `${await ingressServer(app)}/api/hooks/${applet.id}/${applet.webhookToken}`;
    sqliteOf(app.store).pragma("wal_checkpoint(TRUNCATE)");
    disk.fill();
    for (let i = 0; i < 5; i++) {
      const refused = await fetch(url, { method: "POST", body: JSON.stringify({ big: "y".repeat(60_000) }) });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("30");
      expect(((await refused.json()) as { error: string }).error).toMatch(/could not be stored/);
    }
    // One line for the five (the full disk would get one per webhook otherwise).
    expect(lines.filter((l) => /ERROR.*storing webhooks failed; answering 503/.test(l))).toHaveLength(1);
    const health = await fetch(url.replace(/\/api\/hooks\/.*/, "/api/health"));
    expect(health.status).toBe(503);
    expect(((await health.json()) as { problems: string[] }).problems.some((p) => p.startsWith("disk: "))).toBe(true);
    disk.free();
    expect((await fetch(url, { method: "POST", body: "{}" })).status).toBe(202);
    expect(lines.some((l) => /storing webhooks works again/.test(l))).toBe(true);
  });
});
