import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { defaultMigrationsDir, openDatabase } from "@/lib/db/store/sqlite/client";
import { createRunsRepo } from "@/lib/db/store/sqlite/runs";
import { createAlertsRepo } from "@/lib/db/store/sqlite/alerts";
import { alertPolicy } from "@/lib/alerts/policy";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const temp = () => {
  const d = mkdtempSync(path.join(tmpdir(), "whenthen-migrate-"));
  dirs.push(d);
  return d;
};

describe("migrations run on start", () => {
  test("a database made by an older release is brought up to date on open, keeping its rows", () => {
    const dir = temp();
    // The first release: only the first migration in its journal.
    const old = path.join(dir, "old-migrations");
    cpSync(defaultMigrationsDir(), old, { recursive: true });
    const journalFile = path.join(old, "meta", "_journal.json");
    const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: { tag: string }[] };
    expect(journal.entries.length).toBeGreaterThan(1);
    journal.entries = journal.entries.slice(0, 1);
    writeFileSync(journalFile, JSON.stringify(journal));

    const file = path.join(dir, "app.db");
    const v1 = openDatabase(file, { migrationsDir: old });
    v1.sqlite
      .prepare("INSERT INTO applets (id, name, trigger_type, definition, webhook_token, created_at, updated_at) VALUES ('a1', 'kept', 'schedule', '{}', 't1', 'x', 'x')")
      .run();
    v1.sqlite.prepare("INSERT INTO trigger_state (applet_id, next_run_at, created_at, updated_at) VALUES ('a1', '2026-03-07T14:00:00.000Z', 'x', 'x')").run();
    v1.sqlite.prepare("INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at) VALUES ('e1', 'a1', 'webhook', '{}', 'x', 'x', 'x')").run();
    v1.sqlite
      .prepare("INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at) VALUES ('r1', 'a1', 'e1', 'queued', 1, 5, '2026-03-07T13:00:00.000Z', '[]', 'x', 'x')")
      .run();
    const columnsBefore = v1.sqlite.prepare<[], { name: string }>("PRAGMA table_info(trigger_state)").all().map((c) => c.name);
    expect(columnsBefore).not.toContain("pending_slot");
    v1.close();

    // Two processes (web and worker) start the new release at once: each migration applies once.
    const a = openDatabase(file);
    const b = openDatabase(file);
    const columns = a.sqlite.prepare<[], { name: string }>("PRAGMA table_info(trigger_state)").all().map((c) => c.name);
    expect(columns).toContain("pending_slot");
    expect(a.sqlite.prepare("SELECT name FROM applets WHERE id = 'a1'").get()).toEqual({ name: "kept" });
    const applied = b.sqlite.prepare<[], { tag: string }>("SELECT tag FROM _migrations ORDER BY tag").all().map((r) => r.tag);
    const all = (JSON.parse(readFileSync(path.join(defaultMigrationsDir(), "meta", "_journal.json"), "utf8")) as { entries: { tag: string }[] }).entries.map((e) => e.tag);
    expect(applied).toEqual(all);
    // 0002: the queue's full-table index became two partial ones; a run queued before the upgrade
    // is still claimed through them.
    const indexes = a.sqlite.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs'").all().map((r) => r.name);
    expect(indexes).toEqual(expect.arrayContaining(["runs_queued_idx", "runs_running_idx"]));
    expect(indexes).not.toContain("runs_queue_idx");
    expect(createRunsRepo(a.sqlite, createAlertsRepo(a.sqlite, alertPolicy)).claim("w1", new Date("2026-03-07T14:00:00.000Z"))?.id).toBe("r1");
    // 0003: worker leases. A run claimed by a worker that has no row (every run left running in a
    // database from before leases) is recovered at once, keeping its place in the queue.
    const workerColumns = a.sqlite.prepare<[], { name: string }>("PRAGMA table_info(workers)").all().map((c) => c.name);
    expect(workerColumns).toEqual(expect.arrayContaining(["id", "seen_at", "lease_until", "fault"]));
    expect(createRunsRepo(a.sqlite, createAlertsRepo(a.sqlite, alertPolicy)).recoverStale({ now: new Date("2026-03-07T14:00:05.000Z"), stuckBefore: new Date("2026-03-07T13:50:05.000Z") })).toEqual([
      { id: "r1", appletId: "a1", lockedBy: "w1", reason: "lease" },
    ]);
    expect(a.sqlite.prepare("SELECT status, next_attempt_at FROM runs WHERE id = 'r1'").get()).toEqual({ status: "queued", next_attempt_at: "2026-03-07T13:00:00.000Z" });
    a.close();
    b.close();
  });
});
