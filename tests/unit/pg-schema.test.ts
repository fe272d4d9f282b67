import { getTableColumns } from "drizzle-orm";
import { getTableConfig } from "drizzle-orm/pg-core";
import { describe, expect, expectTypeOf, test } from "vitest";
import * as pgSchema from "@/lib/db/store/postgres/schema";
import * as sqliteSchema from "@/lib/db/store/sqlite/schema";

/**
 * Row types are written once in spirit: the PostgreSQL schema keeps SQLite's column types, so both
 * engines give the stores the same row shape. These fail (typecheck and run) when a column is added
 * to one schema and not the other, or changes type in one of them.
 */
const shared = ["users", "applets", "triggerState", "events", "runs", "secrets", "jobLocks", "workers", "appletVersions", "eventFiles"] as const;

describe("the PostgreSQL schema mirrors the SQLite one", () => {
  test("every shared table has the same row type on both engines", () => {
    expectTypeOf<typeof pgSchema.users.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.users.$inferSelect>();
    expectTypeOf<typeof pgSchema.applets.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.applets.$inferSelect>();
    expectTypeOf<typeof pgSchema.triggerState.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.triggerState.$inferSelect>();
    expectTypeOf<typeof pgSchema.events.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.events.$inferSelect>();
    expectTypeOf<typeof pgSchema.runs.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.runs.$inferSelect>();
    expectTypeOf<typeof pgSchema.secrets.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.secrets.$inferSelect>();
    expectTypeOf<typeof pgSchema.jobLocks.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.jobLocks.$inferSelect>();
    expectTypeOf<typeof pgSchema.workers.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.workers.$inferSelect>();
    expectTypeOf<typeof pgSchema.eventFiles.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.eventFiles.$inferSelect>();
    expectTypeOf<typeof pgSchema.appletVersions.$inferSelect>().toEqualTypeOf<typeof sqliteSchema.appletVersions.$inferSelect>();
  });

  test("every shared table has the same column names and nullability on both engines", () => {
    for (const name of shared) {
      const describe = (cols: Record<string, { name: string; notNull: boolean }>) =>
        Object.fromEntries(Object.entries(cols).map(([k, c]) => [k, `${c.name}${c.notNull ? " not null" : ""}`]));
      expect(describe(getTableColumns(pgSchema[name])), name).toEqual(describe(getTableColumns(sqliteSchema[name])));
    }
  });

  test("one running run per applet is a unique index on PostgreSQL", () => {
    const running = getTableConfig(pgSchema.runs).indexes.find((i) => i.config.name === "runs_running_idx");
    expect(running?.config.unique).toBe(true);
  });
});
