import { statSync } from "node:fs";
import { afterEach, describe, expect, test } from "vitest";
import { createApp } from "@/lib/app";
import { silentLogger } from "@/lib/core/log";
import { runRetention } from "@/lib/tick/retention";
import { createTestApp, runsOf, webhookToHttp, type TestApp } from "../helpers/db";
import { sqliteOf } from "@/lib/db/store/sqlite";

/**
 * Growth: retention must give the space back. Real SQLite files in a temp DATA_DIR;
 * file sizes after a TRUNCATE checkpoint, so the WAL does not hide what the main file holds.
 */
const apps: TestApp[] = [];
afterEach(() => {
  for (const a of apps.splice(0)) void a.cleanup();
});

const DAY = 86_400_000;

/** `n` finished runs, 90 % of them received 40 days before the clock, each with a ~1 KB payload. */
async function fill(app: TestApp, n: number): Promise<void> {
  const applet = await app.applets.create({ name: "busy", definition: webhookToHttp("https://status.test/status/200") });
  const now = app.clock.now().getTime();
  const body = JSON.stringify({ note: "x".repeat(1000) });
  for (let start = 0; start < n; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - start) }, (_, k) => {
      const i = start + k;
      const at = new Date(now - (i % 10 === 0 ? DAY : 40 * DAY) + i).toISOString();
      return { appletId: applet.id, source: "webhook" as const, dedupeKey: null, payloadJson: body, receivedAt: at, maxAttempts: 3 };
    });
    await app.store.runs.ingestMany(batch);
  }
  // Finished in bulk: a claim and a finish each for 20,000 runs would be most of the test's time.
  sqliteOf(app.store).prepare("UPDATE runs SET status = 'succeeded'").run();
}

function fileBytes(app: TestApp): number {
  sqliteOf(app.store).pragma("wal_checkpoint(TRUNCATE)");
  return statSync(app.config.databasePath).size;
}

describe("retention returns space to the file system", () => {
  test("after retention deletes 90 % of the runs the database file is at most 30 % of its size before", async () => {
    const app = createTestApp({ start: "2026-03-07T12:00:00.000Z" });
    apps.push(app);
    expect(await app.store.maintenance.spaceMode()).toBe("incremental");
    await fill(app, 20_000);
    const before = fileBytes(app);
    const r = await runRetention(app, app.clock.now(), { holder: "test", pauseMs: 0 });
    expect(r.deletedEvents).toBe(18_000);
    expect(await runsOf(app.store)).toHaveLength(2_000);
    const after = fileBytes(app);
    expect(r.reclaimedBytes).toBeGreaterThan(0);
    expect(after / before).toBeLessThanOrEqual(0.3);
  });

  test("a data dir made before auto_vacuum (auto_vacuum = NONE) is converted once by retention and then shrinks", async () => {
    const first = createTestApp({ start: "2026-03-07T12:00:00.000Z" });
    // What an older whenthen left on disk: the same schema without auto_vacuum.
    sqliteOf(first.store).pragma("auto_vacuum = NONE");
    sqliteOf(first.store).exec("VACUUM");
    expect(await first.store.maintenance.spaceMode()).toBe("none");
    await fill(first, 10_000);
    const dataDir = first.dataDir;
    void first.close();

    // Reopened by the new code: opening alone cannot change the mode of a file that has tables.
    const app = createTestApp({ start: "2026-03-07T12:00:00.000Z", dataDir });
    apps.push(app, { ...first, cleanup: () => first.cleanup() });
    expect(await app.store.maintenance.spaceMode()).toBe("none");
    const before = fileBytes(app);
    await runRetention(app, app.clock.now(), { holder: "test", pauseMs: 0 });
    expect(await app.store.maintenance.spaceMode()).toBe("incremental");
    expect(fileBytes(app) / before).toBeLessThanOrEqual(0.3);
    // From now on freed pages go back at every retention run.
    await app.store.maintenance.deleteRunsBefore("9999-12-31T00:00:00.000Z", 1_000_000);
    await app.store.maintenance.deleteEventsBefore("9999-12-31T00:00:00.000Z", 1_000_000);
    const beforeSecond = fileBytes(app);
    await runRetention(app, app.clock.now(), { holder: "test", pauseMs: 0 });
    expect(fileBytes(app)).toBeLessThan(beforeSecond);
  });

  test("a new database is created with incremental auto-vacuum", async () => {
    const app = createTestApp();
    apps.push(app);
    const again = createApp({ env: { DATA_DIR: app.dataDir }, log: silentLogger });
    expect(await again.store.maintenance.spaceMode()).toBe("incremental");
    void again.close();
  });
});
