import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it, vi } from "vitest";
import { ScheduleReconciler, UnreadableScheduleInput } from "../src/index";
import { SqliteScheduleStore } from "../src/stores/sqlite";
import { makeSchedule, runScheduleStoreContract, T0 } from "./contract";

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
  it("a row whose input is not JSON (edited by hand) stops only itself: it is disabled, its text kept, the others fire", async () => {
    const db = new Database(":memory:");
    try {
      const store = new SqliteScheduleStore({ database: db, table: "corrupt_check" });
      await store.add(makeSchedule({ id: "broken", input: { a: 1 } }));
      await store.add(makeSchedule({ id: "healthy", input: { b: 2 } }));
      db.prepare(`UPDATE "corrupt_check" SET input_json = 'not json' WHERE id = 'broken'`).run();

      const listed = await store.list({ due: true, now: T0 });
      expect(listed.map((s) => s.id).sort()).toEqual(["broken", "healthy"]);
      expect(listed.find((s) => s.id === "broken")?.input).toBeInstanceOf(UnreadableScheduleInput);

      const fired: string[] = [];
      const onError = vi.fn();
      const summary = await new ScheduleReconciler({ adapter: store, triggerFn: (s) => void fired.push(s.id), onError }).tick(T0);
      expect(fired).toEqual(["healthy"]);
      expect(summary.errored).toEqual(["broken"]);
      expect(String(onError.mock.calls[0]?.[0])).toMatch(/"broken": stored input is not valid JSON/);
      expect(await store.get("broken")).toMatchObject({ enabled: false, lastRunStatus: "errored:invalid-schedule" });
      // Nothing is lost: the text a person typed is still there to be fixed.
      expect(db.prepare(`SELECT input_json FROM "corrupt_check" WHERE id = 'broken'`).get()).toEqual({ input_json: "not json" });
    } finally {
      db.close();
    }
  });

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
