import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { RedisScheduleStore } from "../src/stores/redis";
import { makeSchedule, runScheduleStoreContract, T0 } from "./contract";

const url = process.env.TEST_REDIS_URL;
// Several test processes may share the server: every key prefix is unique to this run.
const run = `${process.pid}_${randomBytes(3).toString("hex")}`;
let n = 0;

describe.skipIf(!url)(url ? "redis store" : "redis store (skipped: TEST_REDIS_URL is not set)", () => {
  runScheduleStoreContract({
    name: "redis (ioredis, Lua claim)",
    create: async (clock) => new RedisScheduleStore({ redis: url as string, prefix: `{test:schedules:${run}:${++n}}`, clock }),
    cleanup: async (store) => {
      await store.drop();
      await store.close();
    },
    connectPeer: async (store) => new RedisScheduleStore({ redis: url as string, prefix: store.prefix }),
  });

  it("keeps the enabled sorted set in step with the hashes, and drop removes every key", async () => {
    const prefix = `{test:schedules:${run}:keys}`;
    const redis = new Redis(url as string);
    const store = new RedisScheduleStore({ redis, prefix });
    try {
      await store.add(makeSchedule({ id: "a" }));
      await store.add(makeSchedule({ id: "b", enabled: false, nextRunAt: new Date(T0.getTime() + 5) }));
      expect(await redis.zrange(`${prefix}:enabled`, 0, -1, "WITHSCORES")).toEqual(["a", String(T0.getTime())]);
      await store.update("b", { enabled: true });
      await store.claimDue("a", T0, new Date(T0.getTime() + 10));
      expect(await redis.zrange(`${prefix}:enabled`, 0, -1)).toEqual(["b", "a"]);
      await store.delete("b");
      expect(await redis.zrange(`${prefix}:next`, 0, -1)).toEqual(["a"]);
      await store.drop();
      expect(await redis.keys(`${prefix}*`)).toEqual([]);
      await store.close();
      expect(redis.status).toBe("ready");
    } finally {
      redis.disconnect();
    }
  });

  it("refuses a key prefix with spaces or wildcards", () => {
    expect(() => new RedisScheduleStore({ redis: new Redis({ lazyConnect: true }), prefix: "a b*" })).toThrow(/invalid key prefix/);
  });
});
