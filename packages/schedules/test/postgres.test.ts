import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresScheduleStore } from "../src/stores/postgres";
import { runScheduleStoreContract } from "./contract";

const url = process.env.TEST_POSTGRES_URL;
// Several test processes may share the server: every table name is unique to this run.
const run = `${process.pid}_${randomBytes(3).toString("hex")}`;
let n = 0;

describe.skipIf(!url)(url ? "postgres store" : "postgres store (skipped: TEST_POSTGRES_URL is not set)", () => {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  afterAll(() => pool.end());

  runScheduleStoreContract({
    name: "postgres (pg Pool)",
    create: async (clock) => {
      const store = new PostgresScheduleStore({ pool: url as string, table: `schedules_t_${run}_${++n}`, clock });
      await store.migrate();
      return store;
    },
    cleanup: async (store) => {
      await store.drop();
      await store.close();
    },
    connectPeer: async (store) => new PostgresScheduleStore({ pool: url as string, table: store.table }),
  });

  it("uses the (enabled, next_run_at, id) index for the due query", async () => {
    const table = `schedules_plan_${run}`;
    const store = new PostgresScheduleStore({ pool, table });
    try {
      await store.migrate();
      await store.migrate();
      const client = await pool.connect();
      try {
        // The table is empty, so the planner would prefer a scan; forbidding it proves the index fits.
        await client.query("SET enable_seqscan = off");
        const plan = await client.query<{ "QUERY PLAN": string }>(
          `EXPLAIN SELECT * FROM "${table}" WHERE enabled = true AND next_run_at <= $1 ORDER BY next_run_at, id LIMIT 10`,
          [Date.now()],
        );
        expect(plan.rows.map((r) => r["QUERY PLAN"]).join("\n")).toMatch(new RegExp(`Index Scan using "?${table}_due"?`));
      } finally {
        client.release();
      }
    } finally {
      await store.drop();
      await store.close();
    }
  });

  it("ping is false when the server cannot be reached", async () => {
    const store = new PostgresScheduleStore({ pool: "postgres://postgres@127.0.0.1:1/none", table: "unreachable" });
    try {
      expect(await store.ping()).toBe(false);
    } finally {
      await store.close();
    }
  });
});
