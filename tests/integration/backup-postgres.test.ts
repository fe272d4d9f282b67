import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, test } from "vitest";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore } from "@/lib/db/store/postgres";
import { TEST_POSTGRES_URL, noPostgres } from "../helpers/postgres";

const ROOT = path.resolve(__dirname, "../..");
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const hasTools = spawnSync("sh", ["-c", "command -v pg_dump && command -v pg_restore"]).status === 0;
const skip = noPostgres ?? (hasTools ? null : "pg_dump/pg_restore are not installed (apt-get install -y postgresql-client)");

/** A database of its own on the test server (pg_dump dumps a whole database), dropped afterwards. */
async function scratchDatabase(): Promise<string> {
  // Named after the test database, so a server shared by several checkouts keeps them apart.
  const base = new URL(TEST_POSTGRES_URL).pathname.slice(1) || "whenthen";
  const name = `${base}_backup_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  cleanups.push(async () => {
    const c = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

describe.skipIf(skip)(`pnpm backup on PostgreSQL${skip ? ` (${skip})` : ""}`, () => {
  test("pnpm backup writes a checked pg_dump; pg_restore as docs/backup.md says brings every applet and run back", async () => {
    const url = await scratchDatabase();
    const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-pgbackup-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const store = openPostgresStore({ url, poolSize: 2, alertPolicy });
    await store.ready();
    const t = "2026-03-07T12:00:00.000Z";
    await store.applets.insert({ id: "a1", name: "kept", enabled: true, triggerType: "webhook", definition: { version: 1 }, webhookToken: "tok", now: t });
    for (let i = 0; i < 25; i++) await store.runs.ingest({ appletId: "a1", source: "webhook", dedupeKey: `k${i}`, payloadJson: JSON.stringify({ i }), receivedAt: t, maxAttempts: 5 });
    await store.secrets.put("s1", "API_KEY", "v1:cipher", t);
    await store.close();

    const env: NodeJS.ProcessEnv = { NODE_ENV: "test", PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", DATA_DIR: dataDir, DATABASE_URL: url };
    const r = spawnSync("bash", ["scripts/backup.sh"], { cwd: ROOT, env, encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/backup: wrote .*\/backups\/\d{8}T\d{6}Z\.dump \(\d+ bytes, pg_restore --list ok, via pg_dump\)/);
    const [dump] = readdirSync(path.join(dataDir, "backups")).filter((f) => f.endsWith(".dump"));
    expect(dump).toBeDefined();

    // Lose everything, then restore as documented.
    const lose = new pg.Client({ connectionString: url });
    await lose.connect();
    await lose.query("DELETE FROM applets; DELETE FROM secrets");
    await lose.end();
    const restore = spawnSync("pg_restore", ["--clean", "--if-exists", "--no-owner", "-d", url, path.join(dataDir, "backups", dump!)], { encoding: "utf8" });
    expect(restore.stderr).toBe("");
    expect(restore.status).toBe(0);

    const back = openPostgresStore({ url, poolSize: 2, alertPolicy });
    cleanups.push(() => back.close());
    await back.ready();
    expect((await back.applets.list()).map((a) => a.name)).toEqual(["kept"]);
    expect((await back.runs.list({ limit: 200 })).runs).toHaveLength(25);
    expect(await back.secrets.getEncrypted("API_KEY")).toBe("v1:cipher");
    // The restored database still announces claimable runs to an idle worker (the trigger came back with it).
    const heard = new Promise<void>((resolve) => back.notifications.onQueued(resolve));
    await back.notifications.watchQueue("idle-worker", 60_000);
    await new Promise((res) => setTimeout(res, 300));
    await back.runs.ingest({ appletId: "a1", source: "webhook", dedupeKey: null, payloadJson: "{}", receivedAt: t, maxAttempts: 5 });
    await heard;
  });

  test("a backup taken while webhooks arrive is one consistent moment: every run acknowledged before it is in it, and every run in it has its event", async () => {
    const url = await scratchDatabase();
    const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-pgbackup-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const store = openPostgresStore({ url, poolSize: 4, alertPolicy });
    await store.ready();
    const t = "2026-03-07T12:00:00.000Z";
    await store.applets.insert({ id: "a1", name: "busy", enabled: true, triggerType: "webhook", definition: { version: 1 }, webhookToken: "tok", now: t });
    let acknowledged = 0;
    let stop = false;
    const sender = async (lane: number) => {
      for (let i = 0; !stop; i++) {
        await store.runs.ingest({ appletId: "a1", source: "webhook", dedupeKey: `l${lane}-${i}`, payloadJson: JSON.stringify({ lane, i }), receivedAt: t, maxAttempts: 5 });
        acknowledged++;
      }
    };
    const lanes = [0, 1, 2, 3].map(sender);
    await new Promise((r) => setTimeout(r, 300));
    const beforeBackup = acknowledged;
    const env: NodeJS.ProcessEnv = { NODE_ENV: "test", PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", DATA_DIR: dataDir, DATABASE_URL: url };
    const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn("bash", ["scripts/backup.sh"], { cwd: ROOT, env });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      child.on("close", (status) => resolve({ status, stdout, stderr }));
    });
    const afterBackup = acknowledged;
    stop = true;
    await Promise.all(lanes);
    await store.close();
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(afterBackup, "webhooks kept arriving while the backup ran").toBeGreaterThan(beforeBackup);
    const [dump] = readdirSync(path.join(dataDir, "backups")).filter((f) => f.endsWith(".dump"));

    const restoredUrl = await scratchDatabase();
    const restore = spawnSync("pg_restore", ["--no-owner", "-d", restoredUrl, path.join(dataDir, "backups", dump!)], { encoding: "utf8" });
    expect(restore.stderr).toBe("");
    expect(restore.status).toBe(0);
    const c = new pg.Client({ connectionString: restoredUrl });
    await c.connect();
    cleanups.push(() => c.end());
    const one = async (sql: string) => Number((await c.query<{ n: string }>(sql)).rows[0]!.n);
    const runs = await one("SELECT COUNT(*) AS n FROM runs");
    expect(runs).toBeGreaterThanOrEqual(beforeBackup);
    expect(runs).toBeLessThanOrEqual(afterBackup);
    expect(await one("SELECT COUNT(*) AS n FROM events")).toBe(runs);
    expect(await one("SELECT COUNT(*) AS n FROM runs r LEFT JOIN events e ON e.id = r.event_id WHERE e.id IS NULL")).toBe(0);
    // Each lane's webhooks are in it as a prefix: nothing acknowledged before a restored one is missing.
    const lanesBack = (await c.query<{ lane: number; n: string; top: number }>("SELECT (payload->>'lane')::int AS lane, COUNT(*) AS n, MAX((payload->>'i')::int) AS top FROM events GROUP BY 1")).rows;
    for (const l of lanesBack) expect(Number(l.n), `lane ${l.lane}`).toBe(l.top + 1);
    const back = openPostgresStore({ url: restoredUrl, poolSize: 2, alertPolicy });
    cleanups.push(() => back.close());
    await back.ready();
    expect((await back.runs.list({ limit: 10 })).runs.length).toBeGreaterThan(0);
  }, 60_000);
});
