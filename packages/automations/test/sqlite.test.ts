import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { planEvent } from "../src/index";
import { applyAutomationsMigration, automationsMigrationSql, SqliteDatabase, SqliteRuleStore, SqliteScheduler } from "../src/sqlite";
import { runSchedulerContract } from "./contract";
import { bookingEvent, reminderRule } from "./fixtures";

const dir = mkdtempSync(join(tmpdir(), "automations-sqlite-"));
let counter = 0;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function open(): Database.Database {
  const db = new Database(join(dir, `t${counter++}.db`));
  db.pragma("journal_mode = WAL");
  db.pragma("busy_timeout = 5000");
  applyAutomationsMigration(db);
  return db;
}

runSchedulerContract("better-sqlite3", async () => {
  const db = open();
  const adapted = new SqliteDatabase(db);
  const others: Database.Database[] = [];
  return {
    scheduler: new SqliteScheduler(adapted),
    makeScheduler: (options) => {
      // Another connection to the same file, as another worker process would have.
      const other = new Database(db.name);
      other.pragma("busy_timeout = 5000");
      others.push(other);
      return new SqliteScheduler(other, options);
    },
    rules: new SqliteRuleStore(adapted),
    write: async (writes) => {
      await adapted.batch(writes);
    },
    close: async () => {
      for (const other of others) other.close();
      db.close();
    },
  };
});

describe("better-sqlite3 specifics", () => {
  it("the plan and the caller's own write commit in one transaction, or not at all", async () => {
    const db = open();
    db.prepare("CREATE TABLE booking (id TEXT PRIMARY KEY, starts_at TEXT NOT NULL)").run();
    const scheduler = new SqliteScheduler(db);
    const plan = await planEvent([reminderRule()], bookingEvent("booking.created", 0, "2026-10-12T10:00:00-06:00", Date.parse("2026-10-10T12:00:00Z")), Date.parse("2026-10-10T12:00:00Z"));
    expect(() =>
      db.transaction(() => {
        db.prepare("INSERT INTO booking VALUES ('b1', '2026-10-12T10:00:00-06:00')").run();
        for (const statement of scheduler.apply(plan)) statement.runSync();
        throw new Error("the caller's write failed");
      })(),
    ).toThrow("the caller's write failed");
    expect(await scheduler.get(plan.runs[0]!.id)).toBeNull();
    db.transaction(() => {
      db.prepare("INSERT INTO booking VALUES ('b1', '2026-10-12T10:00:00-06:00')").run();
      scheduler.write(scheduler.apply(plan));
    })();
    expect((await scheduler.get(plan.runs[0]!.id))!.status).toBe("pending");
    db.close();
  });

  it("the migration file and the statements create the same schema", () => {
    const a = new Database(":memory:");
    const b = new Database(":memory:");
    a.exec(automationsMigrationSql());
    applyAutomationsMigration(b);
    const schema = (d: Database.Database) => d.prepare("SELECT type, name, sql FROM sqlite_master ORDER BY name").all();
    expect(schema(a)).toEqual(schema(b));
    expect((schema(a) as { name: string }[]).map((r) => r.name)).toEqual(expect.arrayContaining(["automation_rule", "automation_run", "automation_subject"]));
  });
});
