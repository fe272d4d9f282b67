import { execFile, spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterEach, describe, expect, test } from "vitest";
import { openDatabase } from "@/lib/db/store/sqlite/client";
import { createTestApp, webhookToHttp, type TestApp } from "../helpers/db";

/**
 * AC18: `pnpm backup` (scripts/backup.sh), then deleting app.db and restoring the backup brings
 * every record back. Runs the real script against a temp DATA_DIR, with each copy tool it can use.
 */
const root = path.resolve(__dirname, "../..");
const backupScript = path.join(root, "scripts/backup.sh");
const restoreScript = path.join(root, "scripts/restore.sh");
const execFileAsync = promisify(execFile);
const BACKUP_NAME = /^\d{8}T\d{6}Z\.db$/;
const TABLES = ["users", "applets", "trigger_state", "events", "runs", "secrets", "job_locks"] as const;

const hasSqlite3 = spawnSync("sh", ["-c", "command -v sqlite3"]).status === 0;
// The sqlite3 CLI is what the Docker image uses; better-sqlite3 through tsx is the fallback.
const tools = [
  { tool: "sqlite3", skip: hasSqlite3 ? null : "the sqlite3 CLI is not installed (apt-get install -y sqlite3)" },
  { tool: "node", skip: null },
] as const;

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/** Only what the scripts need, so the developer's own DATA_DIR or DATABASE_URL cannot leak in. */
const scriptEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: process.env.HOME ?? "/tmp",
  NODE_ENV: "test",
  ...extra,
});

function runScript(script: string, args: string[], env: Record<string, string>) {
  return spawnSync("bash", [script, ...args], { cwd: root, encoding: "utf8", env: scriptEnv(env) });
}

function backups(dataDir: string): string[] {
  const dir = path.join(dataDir, "backups");
  return existsSync(dir) ? readdirSync(dir).filter((f) => BACKUP_NAME.test(f)).sort() : [];
}

function counts(file: string): Record<string, number> {
  const db = new Database(file, { readonly: true });
  try {
    return Object.fromEntries(TABLES.map((t) => [t, (db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n]));
  } finally {
    db.close();
  }
}

function removeDatabase(file: string): void {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
}

/** A test app with rows in every table, left open so part of the data is still only in the WAL. */
async function populatedApp(): Promise<TestApp> {
  const app = createTestApp();
  cleanups.push(() => app.cleanup());
  const now = app.clock.now().toISOString();
  await app.store.users.insertIfNone({ id: "u1", email: "admin@example.com", passwordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", now });
  for (let a = 0; a < 3; a++) {
    const applet = await app.applets.create({ name: `applet ${a}`, definition: webhookToHttp("https://hooks.example.com/in") });
    await app.store.triggerState.save(applet.id, { nextRunAt: null, lastPolledAt: now, seenKeys: [`k${a}`], lastValue: { price: a }, etag: null, lastModified: null, lastError: null, errorCount: 0 }, now);
    for (let e = 0; e < 7; e++) {
      await app.store.runs.ingest({ appletId: applet.id, source: "webhook", dedupeKey: `d${e}`, payloadJson: JSON.stringify({ body: { n: e } }), receivedAt: now, maxAttempts: 5 });
    }
  }
  await app.secrets.set("SLACK_WEBHOOK", "https://hooks.slack.com/services/T0/B0/x");
  await app.secrets.set("API_TOKEN", "t0ken");
  await app.store.jobLocks.heartbeat("worker_heartbeat", app.clock.now());
  return app;
}

describe.each(tools)("backup with $tool", ({ tool, skip }) => {
  test.skipIf(skip !== null)(`AC18: pnpm backup, delete app.db, copy the backup back: every table's rows come back (${tool})${skip ? ` (skipped: ${skip})` : ""}`, async () => {
    const app = await populatedApp();
    const before = counts(app.config.databasePath);
    for (const t of TABLES) expect(before[t], t).toBeGreaterThan(0);

    const r = runScript(backupScript, [], { DATA_DIR: app.dataDir, WHENTHEN_BACKUP_TOOL: tool });
    expect(r.status, r.stderr).toBe(0);
    const files = backups(app.dataDir);
    expect(files).toHaveLength(1);
    const backupFile = path.join(app.dataDir, "backups", files[0]!);
    // A standalone file: nothing of it lives in a -wal beside it.
    expect(existsSync(`${backupFile}-wal`)).toBe(false);

    void app.close();
    removeDatabase(app.config.databasePath);
    expect(existsSync(app.config.databasePath)).toBe(false);
    copyFileSync(backupFile, app.config.databasePath);

    const reopened = openDatabase(app.config.databasePath);
    try {
      expect(reopened.sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
    } finally {
      reopened.close();
    }
    expect(counts(app.config.databasePath)).toEqual(before);
  });

  test.skipIf(skip !== null)(`AC18: with 15 dated backups present the script prunes to the newest 14 and keeps other files (${tool})`, async () => {
    const app = await populatedApp();
    const dir = path.join(app.dataDir, "backups");
    mkdirSync(dir, { recursive: true });
    const dated = Array.from({ length: 15 }, (_, i) => `202501${String(i + 1).padStart(2, "0")}T030000Z.db`);
    for (const name of dated) writeFileSync(path.join(dir, name), "old backup");
    writeFileSync(path.join(dir, "before-migration.db"), "kept by hand");

    const r = runScript(backupScript, [], { DATA_DIR: app.dataDir, WHENTHEN_BACKUP_TOOL: tool });
    expect(r.status, r.stderr).toBe(0);

    const kept = backups(app.dataDir);
    expect(kept).toHaveLength(14);
    // The new backup is the newest name; the two oldest dated files made room for it.
    const fresh = kept[kept.length - 1]!;
    expect(dated).not.toContain(fresh);
    expect(kept.slice(0, 13)).toEqual(dated.slice(2));
    expect(existsSync(path.join(dir, "before-migration.db"))).toBe(true);
    expect(r.stdout).toContain(`pruned ${dated[0]}`);
  });

  test.skipIf(skip !== null)(`AC18: a backup taken while a writer keeps inserting runs restores to a sound database holding every run committed before it began (${tool})`, async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-backup-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const dbFile = path.join(dataDir, "app.db");

    // Enough pages that the online backup needs many steps: a copy that is not pinned to one
    // snapshot restarts on every commit of the writer and never finishes.
    const seedDb = openDatabase(dbFile);
    const seedApplet = "00000000-0000-4000-8000-0000000000aa";
    const now = new Date().toISOString();
    seedDb.sqlite
      .prepare("INSERT INTO applets (id, name, enabled, trigger_type, definition, webhook_token, run_count, created_at, updated_at) VALUES (?, 'busy', 1, 'webhook', '{}', 'tok-busy-0123456789', 0, ?, ?)")
      .run(seedApplet, now, now);
    const fill = seedDb.sqlite.prepare(
      "INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at) VALUES (?, ?, 'webhook', NULL, ?, ?, ?, ?)",
    );
    const filler = "x".repeat(600);
    seedDb.sqlite.transaction(() => {
      for (let i = 0; i < 12_000; i++) fill.run(`fill-${i}`, seedApplet, JSON.stringify({ filler }), now, now, now);
    })();
    seedDb.close();

    // The writer is another process, as the worker is: it ingests through the store and
    // reports each committed sequence number.
    const writerFile = path.join(dataDir, "writer.ts");
    writeFileSync(
      writerFile,
      `import { openSqliteStore } from ${JSON.stringify(path.join(root, "lib/db/store/sqlite/index.ts"))};
import { alertPolicy } from ${JSON.stringify(path.join(root, "lib/alerts/policy.ts"))};
const store = openSqliteStore({ file: ${JSON.stringify(dbFile)}, alertPolicy });
const runs = store.runs;
let seq = 0;
const pad = "y".repeat(400);
async function batch() {
  for (let i = 0; i < 25; i++) {
    seq++;
    await runs.ingest({ appletId: ${JSON.stringify(seedApplet)}, source: "webhook", dedupeKey: "seq-" + seq, payloadJson: JSON.stringify({ seq, pad }), receivedAt: new Date().toISOString(), maxAttempts: 5 });
  }
  process.stdout.write("ack " + seq + "\\n");
  setImmediate(() => void batch());
}
process.on("SIGTERM", () => { void store.close().then(() => process.exit(0)); });
void batch();
`,
    );
    const writer = spawn(path.join(root, "node_modules/.bin/tsx"), [writerFile], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    cleanups.push(() => {
      if (writer.exitCode === null) writer.kill("SIGKILL");
    });
    let acked = 0;
    let writerErr = "";
    writer.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      const m = chunk.match(/ack (\d+)\n(?![\s\S]*ack \d+\n)/);
      if (m) acked = Number(m[1]);
    });
    writer.stderr.setEncoding("utf8").on("data", (c: string) => (writerErr += c));

    const deadline = Date.now() + 20_000;
    while (acked < 500) {
      if (writer.exitCode !== null || Date.now() > deadline) throw new Error(`writer did not get going (acked ${acked}): ${writerErr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const ackedBefore = acked;
    const backupRun = await execFileAsync("bash", [backupScript], {
      cwd: root,
      env: scriptEnv({ DATA_DIR: dataDir, WHENTHEN_BACKUP_TOOL: tool }),
      timeout: 45_000,
    });
    const ackedAfter = acked;
    writer.kill("SIGTERM");
    await new Promise((r) => writer.once("exit", r));
    // The writer really was writing while the backup ran.
    expect(ackedAfter, backupRun.stdout).toBeGreaterThan(ackedBefore);

    const files = backups(dataDir);
    expect(files).toHaveLength(1);
    const restoredDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-restored-"));
    cleanups.push(() => rmSync(restoredDir, { recursive: true, force: true }));
    const restored = path.join(restoredDir, "app.db");
    copyFileSync(path.join(dataDir, "backups", files[0]!), restored);

    const db = openDatabase(restored);
    try {
      expect(db.sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
      const seqs = db.sqlite
        .prepare("SELECT json_extract(e.payload, '$.seq') AS seq FROM events e JOIN runs r ON r.event_id = e.id WHERE e.dedupe_key LIKE 'seq-%'")
        .all() as { seq: number }[];
      const have = new Set(seqs.map((s) => s.seq));
      const missing = Array.from({ length: ackedBefore }, (_, i) => i + 1).filter((s) => !have.has(s));
      expect(missing).toEqual([]);
      // One snapshot: every event in the copy has its run, with nothing half-written.
      const orphans = db.sqlite.prepare("SELECT COUNT(*) AS n FROM events e WHERE e.dedupe_key LIKE 'seq-%' AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.event_id = e.id)").get() as { n: number };
      expect(orphans.n).toBe(0);
    } finally {
      db.close();
    }
  }, 90_000);
});

test.skipIf(!hasSqlite3)("AC18: scripts/restore.sh refuses while the worker's heartbeat is fresh, then restores and moves the old database aside", async () => {
  const app = await populatedApp();
  const before = counts(app.config.databasePath);
  const env = { DATA_DIR: app.dataDir };
  expect(runScript(backupScript, [], env).status).toBe(0);
  const backupFile = path.join(app.dataDir, "backups", backups(app.dataDir)[0]!);
  // A row written after the backup: the restore must bring the database back to the backup's state.
  await app.secrets.set("WRITTEN_AFTER_BACKUP", "x");
  await app.store.jobLocks.heartbeat("worker_heartbeat", new Date());

  const refused = runScript(restoreScript, [backupFile], env);
  expect(refused.status).toBe(1);
  expect(refused.stderr).toMatch(/open by pid|heartbeat/);

  void app.close();
  const ok = runScript(restoreScript, [backupFile, "--force"], env);
  expect(ok.status, ok.stderr).toBe(0);
  expect(counts(app.config.databasePath)).toEqual(before);
  const aside = readdirSync(app.dataDir).filter((f) => /^app\.db\.pre-restore-\d{8}T\d{6}Z$/.test(f));
  expect(aside).toHaveLength(1);
  expect(counts(path.join(app.dataDir, aside[0]!)).secrets).toBe(before.secrets! + 1);
});

test("AC18: backup.sh fails loudly when there is no database to back up", () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-empty-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const r = runScript(backupScript, [], { DATA_DIR: dataDir });
  expect(r.status).toBe(1);
  expect(r.stderr).toContain(`no database at ${path.join(dataDir, "app.db")}`);
  expect(backups(dataDir)).toEqual([]);
});

test("AC18: backup.sh follows DATABASE_URL=file: like lib/core/config.ts", async () => {
  const app = await populatedApp();
  const elsewhere = mkdtempSync(path.join(os.tmpdir(), "whenthen-dataonly-"));
  cleanups.push(() => rmSync(elsewhere, { recursive: true, force: true }));
  const r = runScript(backupScript, [], { DATA_DIR: elsewhere, DATABASE_URL: `file:${app.config.databasePath}` });
  expect(r.status, r.stderr).toBe(0);
  expect(backups(elsewhere)).toHaveLength(1);
  expect(counts(path.join(elsewhere, "backups", backups(elsewhere)[0]!)).runs).toBe(counts(app.config.databasePath).runs);
});
