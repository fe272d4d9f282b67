import { Miniflare } from "miniflare";
import { afterAll, beforeAll } from "vitest";
import { AUTOMATIONS_MIGRATION_STATEMENTS, D1RuleStore, D1Scheduler } from "../src/d1";
import { runSchedulerContract } from "./contract";

type D1 = Awaited<ReturnType<Miniflare["getD1Database"]>>;

let mf: Miniflare;
let db: D1;

beforeAll(async () => {
  mf = new Miniflare({ modules: true, script: "export default {}", d1Databases: ["DB"] });
  db = await mf.getD1Database("DB");
});

afterAll(async () => {
  await mf?.dispose();
});

runSchedulerContract("D1 (miniflare)", async () => {
  // A fresh schema per test: drop what the last test left, then apply the migration as a
  // Worker would, one statement per string in one batch.
  await db.batch(["automation_rule", "automation_run", "automation_subject"].map((t) => db.prepare(`DROP TABLE IF EXISTS ${t}`)));
  await db.batch(AUTOMATIONS_MIGRATION_STATEMENTS.map((sql) => db.prepare(sql)));
  return {
    scheduler: new D1Scheduler(db),
    makeScheduler: (options) => new D1Scheduler(db, options),
    rules: new D1RuleStore(db),
    write: async (writes) => {
      if (writes.length > 0) await db.batch(writes);
    },
    close: async () => {},
  };
});
