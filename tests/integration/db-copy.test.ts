import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore } from "@/lib/db/store/postgres";
import { openDatabase } from "@/lib/db/store/sqlite/client";
import { TEST_POSTGRES_URL, createTestSchema, urlWithSchema, noPostgres } from "../helpers/postgres";

const ROOT = path.resolve(__dirname, "../..");
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ATTACHMENT = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

/** A SQLite install with one of everything db:copy must carry: a user, two applets, their state, events, runs in several states, a secret. */
function seedSqlite(file: string) {
  const db = openDatabase(file);
  const t = "2026-03-07T12:00:00.000Z";
  const s = db.sqlite;
  s.prepare("INSERT INTO users (id, email, password_hash, session_version, created_at, updated_at) VALUES ('u1', 'me@example.com', '$argon2id$x', 3, ?, ?)").run(t, t);
  for (const id of ["a1", "a2"]) {
    s.prepare("INSERT INTO applets (id, name, enabled, trigger_type, definition, webhook_token, last_fired_at, run_count, created_at, updated_at) VALUES (?, ?, 1, 'webhook', ?, ?, ?, 2, ?, ?)").run(
      id,
      `Applet ${id} ünïcode`,
      JSON.stringify({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://x.example/{{a}}" } }] }),
      `token-${id}`,
      t,
      t,
      t,
    );
    // Its history (one version), copied with it.
    s.prepare(
      "INSERT INTO applet_versions (id, applet_id, version, name, enabled, definition, source, restored_from, author_type, author_id, author_label, created_at, updated_at) VALUES (?, ?, 1, ?, 1, ?, 'create', NULL, 'user', 'u1', 'me@example.com', ?, ?)",
    ).run(`${id}-v1`, id, `Applet ${id} ünïcode`, JSON.stringify({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://x.example/{{a}}" } }] }), t, t);
    s.prepare("INSERT INTO trigger_state (applet_id, next_run_at, seen_keys, last_value, error_count, pending_slot, created_at, updated_at) VALUES (?, ?, '[\"k1\",\"k2\"]', '{\"v\":1}', 1, NULL, ?, ?)").run(id, t, t, t);
    for (let i = 0; i < 5; i++) {
      const e = `${id}-e${i}`;
      s.prepare("INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at) VALUES (?, ?, 'webhook', ?, ?, ?, ?, ?)").run(e, id, i === 0 ? "dk" : null, JSON.stringify({ body: { i, z: "last", a: "first" } }), t, t, t);
      const status = ["queued", "running", "succeeded", "failed", "dead"][i]!;
      s.prepare(
        "INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, locked_by, claim_token, steps, error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 5, ?, ?, ?, ?, ?, ?, ?)",
      ).run(`${e}-r`, id, e, status, i + 1, status === "queued" ? t : null, status === "running" ? "old-worker" : null, status === "running" ? "tok" : null, JSON.stringify([{ action: 0, status: "succeeded", output: { ok: i } }]), status === "failed" ? "boom" : null, t, t);
    }
  }
  s.prepare("INSERT INTO secrets (id, name, value_encrypted, created_at, updated_at) VALUES ('s1', 'API_KEY', 'v1:ciphertext', ?, ?)").run(t, t);
  // An inbound mail's attachment (a BLOB, every byte value) for one event.
  s.prepare("INSERT INTO event_files (event_id, filename, content_type, size, content, created_at) VALUES ('a1-e0', 'INV-1.pdf', 'application/pdf', 256, ?, ?)").run(ATTACHMENT, t);
  db.close();
}

describe.skipIf(noPostgres)(`pnpm db:copy${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  test("copies every applet, token, secret, event and run of a SQLite install into PostgreSQL, read back through the PostgreSQL store", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "whenthen-copy-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, "app.db");
    seedSqlite(file);
    // The install's keys live beside its database (generated on its first start).
    const key = Buffer.alloc(32, 7).toString("base64");
    writeFileSync(path.join(dir, "SECRETS_KEY"), key);
    writeFileSync(path.join(dir, "SESSION_SECRET"), "session-secret");
    const { schema, drop } = await createTestSchema("copy");
    cleanups.push(drop);
    const url = urlWithSchema(schema);

    const env: NodeJS.ProcessEnv = { NODE_ENV: "test", PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" };
    const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/db-copy.ts", "--from", `file:${file}`, "--to", url], { cwd: ROOT, env, encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("db:copy: done: 1 users, 2 applets, 2 applet_versions, 2 trigger_state, 10 events, 10 runs, 0 planned_runs, 0 planned_subjects, 1 secrets, 5 job_locks, 0 workers, 0 api_tokens, 0 alert_settings, 0 alerts, 1 event_files");

    const store = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 2, keys: { secretsKey: Buffer.from(key, "base64"), sessionSecret: "session-secret" }, alertPolicy });
    cleanups.push(() => store.close());
    await store.ready();
    const applets = await store.applets.list();
    expect(applets.map((a) => [a.id, a.name, a.webhookToken, a.runCount, a.enabled])).toEqual([
      ["a1", "Applet a1 ünïcode", "token-a1", 2, true],
      ["a2", "Applet a2 ünïcode", "token-a2", 2, true],
    ]);
    expect(applets[0]!.definition).toEqual({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://x.example/{{a}}" } }] });
    expect(await store.applets.byWebhookToken("token-a2")).toEqual({ id: "a2", name: "Applet a2 ünïcode" });
    expect((await store.applets.versions("a2")).map((v) => [v.version, v.source, v.author.label, v.definition])).toEqual([[1, "create", "me@example.com", applets[0]!.definition]]);
    expect(applets.map((a) => a.version)).toEqual([1, 1]);
    expect(await store.secrets.getEncrypted("API_KEY")).toBe("v1:ciphertext");
    expect(await store.eventFiles.get("a1-e0", "INV-1.pdf")).toEqual({ contentType: "application/pdf", size: 256, content: ATTACHMENT });
    expect(await store.users.byEmail("me@example.com")).toMatchObject({ id: "u1", sessionVersion: 3 });
    expect(await store.triggerState.get("a1")).toMatchObject({ seenKeys: ["k1", "k2"], lastValue: { v: 1 }, errorCount: 1 });
    const runs = await store.runs.list({ limit: 200 });
    expect(runs.runs).toHaveLength(10);
    expect(runs.runs.map((x) => x.status).sort()).toEqual(["dead", "dead", "failed", "failed", "queued", "queued", "running", "running", "succeeded", "succeeded"]);
    const failed = await store.runs.get("a1-e3-r");
    expect(failed).toMatchObject({ status: "failed", attempt: 4, error: "boom", steps: [{ action: 0, status: "succeeded", output: { ok: 3 } }] });
    // The payload keeps its key order (json, not jsonb).
    const event = await store.runs.event("a2-e1");
    expect(Object.keys(event!.payload.body as object)).toEqual(["i", "z", "a"]);
    // The dedupe key still dedupes, and the copied queue works: the queued run is claimable.
    expect(await store.runs.ingest({ appletId: "a1", source: "webhook", dedupeKey: "dk", payloadJson: "{}", receivedAt: "2026-03-07T13:00:00.000Z", maxAttempts: 5 })).toBeNull();
    // a1 and a2 each have a run still `running` (of a worker that is gone): recovered, then claimable.
    const recovered = await store.runs.recoverStale({ now: new Date("2026-03-07T13:00:00.000Z"), stuckBefore: new Date(0) });
    expect(recovered.map((x) => x.id).sort()).toEqual(["a1-e1-r", "a2-e1-r"]);

    // A second copy into the same database is refused: nothing is doubled.
    const again = spawnSync(process.execPath, ["--import", "tsx", "scripts/db-copy.ts", "--from", `file:${file}`, "--to", url], { cwd: ROOT, env, encoding: "utf8" });
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("the target database already has applets, runs or users");
  });
});
