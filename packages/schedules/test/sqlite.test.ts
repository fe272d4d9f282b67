import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteScheduleStore } from "../src/stores/sqlite.js";
import { runScheduleStoreContract } from "./contract.js";

const dir = mkdtempSync(join(tmpdir(), "schedules-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

runScheduleStoreContract({
  name: "sqlite (better-sqlite3, WAL file)",
  create: async (clock) => new SqliteScheduleStore({ database: join(dir, `store-${++n}.db`), table: "schedules", clock }),
  cleanup: async (store) => store.close(),
  // A separate better-sqlite3 connection to the same file, as a second runner process would have.
  connectPeer: async (store) => new SqliteScheduleStore({ database: store.db.name, table: store.table }),
});

describe("sqlite store specifics", () => {
  it("answers a due query from the (enabled, next_run_at) index, not a table scan", () => {
    const db = new Database(":memory:");
    try {
      const store = new SqliteScheduleStore({ database: db, table: "plan_check" });
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN SELECT * FROM "plan_check" WHERE enabled = ? AND next_run_at <= ? ORDER BY next_run_at, id LIMIT ?`)
        .all(1, Date.now(), 10) as Array<{ detail: string }>;
      const details = plan.map((row) => row.detail).join("\n");
      expect(details).toMatch(/USING (COVERING )?INDEX plan_check_due/);
      expect(details).not.toMatch(/TEMP B-TREE/);
      expect(store.table).toBe("plan_check");
    } finally {
      db.close();
    }
  });

  it("leaves a host-owned connection open on close, and closes one it opened itself", async () => {
    const db = new Database(":memory:");
    const borrowed = new SqliteScheduleStore({ database: db });
    await borrowed.close();
    expect(db.open).toBe(true);
    db.close();
    const owned = new SqliteScheduleStore({ database: join(dir, "owned.db") });
    await owned.close();
    expect(owned.db.open).toBe(false);
    expect(await owned.ping()).toBe(false);
  });

  it("refuses a table name that is not a plain identifier", () => {
    expect(() => new SqliteScheduleStore({ database: ":memory:", table: 'x"; DROP TABLE y; --' })).toThrow(/invalid table name/);
  });
});
