import Database from "better-sqlite3";
import { eq, getTableColumns } from "drizzle-orm";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { getTableConfig } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { automationRule, automationRun, automationSubject } from "../src/drizzle";
import { planEvent } from "../src/index";
import { applyAutomationsMigration, SqliteRuleStore, SqliteScheduler } from "../src/sqlite";
import { bookingEvent, iso, reminderRule } from "./fixtures";

describe("drizzle tables", () => {
  it.each([
    ["automation_rule", automationRule],
    ["automation_run", automationRun],
    ["automation_subject", automationSubject],
  ] as const)("%s declares exactly the columns the migration creates", (name, table) => {
    const db = new Database(":memory:");
    applyAutomationsMigration(db);
    const columns = (db.prepare(`PRAGMA table_info(${name})`).all() as { name: string }[]).map((c) => c.name).sort();
    expect(getTableConfig(table).name).toBe(name);
    expect(Object.values(getTableColumns(table)).map((c) => c.name).sort()).toEqual(columns);
    db.close();
  });

  it("reads what the scheduler and the rule store wrote", async () => {
    const sqlite = new Database(":memory:");
    applyAutomationsMigration(sqlite);
    const scheduler = new SqliteScheduler(sqlite);
    const now = iso("2026-10-10T12:00:00Z");
    await new SqliteRuleStore(sqlite).put(reminderRule(), now);
    const plan = await planEvent([reminderRule()], bookingEvent("booking.created", 0, "2026-10-12T10:00:00-06:00", now), now);
    scheduler.write(scheduler.apply(plan));
    const db = drizzle(sqlite);
    const [run] = db.select().from(automationRun).where(eq(automationRun.id, plan.runs[0]!.id)).all();
    expect(run).toMatchObject({ status: "pending", dueAt: iso("2026-10-11T16:00:00Z"), cancelKey: "booking:b1", subjectVersion: 0 });
    expect(db.select().from(automationRule).all()).toMatchObject([{ id: "booking-reminder-24h", enabled: true }]);
    expect(db.select().from(automationSubject).all()).toEqual([{ cancelKey: "booking:b1", version: 0, updatedAt: now }]);
    sqlite.close();
  });
});
