import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { MysqlScheduleStore } from "../src/stores/mysql";
import { runScheduleStoreContract } from "./contract";

const url = process.env.TEST_MYSQL_URL;
// Several test processes may share the server: every table name is unique to this run.
const run = `${process.pid}_${randomBytes(3).toString("hex")}`;
let n = 0;

describe.skipIf(!url)(url ? "mysql store" : "mysql store (skipped: TEST_MYSQL_URL is not set)", () => {
  const pool = url ? mysql.createPool({ uri: url, connectionLimit: 2 }) : undefined;
  afterAll(() => pool?.end());

  runScheduleStoreContract({
    name: "mysql (mysql2/promise pool)",
    create: async (clock) => {
      const store = new MysqlScheduleStore({ pool: url as string, table: `schedules_t_${run}_${++n}`, clock });
      await store.migrate();
      return store;
    },
    cleanup: async (store) => {
      await store.drop();
      await store.close();
    },
    connectPeer: async (store) => new MysqlScheduleStore({ pool: url as string, table: store.table }),
  });

  it("stores dates as BIGINT milliseconds and uses the due index", async () => {
    const table = `schedules_plan_${run}`;
    const store = new MysqlScheduleStore({ pool: pool as mysql.Pool, table });
    try {
      await store.migrate();
      await store.migrate();
      const [columns] = await (pool as mysql.Pool).query<mysql.RowDataPacket[]>(`SHOW COLUMNS FROM \`${table}\` WHERE Field = 'next_run_at'`);
      expect(String(columns[0]?.Type)).toMatch(/^bigint/);
      const [plan] = await (pool as mysql.Pool).query<mysql.RowDataPacket[]>(
        `EXPLAIN SELECT * FROM \`${table}\` FORCE INDEX (\`${table}_due\`) WHERE enabled = 1 AND next_run_at <= ? ORDER BY next_run_at, id LIMIT 10`,
        [Date.now()],
      );
      expect(plan[0]?.key).toBe(`${table}_due`);
      expect(String(plan[0]?.Extra ?? "")).not.toMatch(/filesort/);
    } finally {
      await store.drop();
      await store.close();
    }
  });
});
