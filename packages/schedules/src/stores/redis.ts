import { createHash, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { ScheduleConflictError, ScheduleValidationError } from "../errors";
import type { Schedule, ScheduleAdapter, ScheduleClock, ScheduleFilter, SchedulePatch } from "../types";
import {
  COLUMNS,
  type Column,
  type ScheduleRow,
  assertClaimDates,
  assertLimit,
  assertPatchedTiming,
  fromRow,
  kindList,
  patchColumns,
  rowForAdd,
  systemNow,
  touchesTiming,
} from "./shared";

export interface RedisScheduleStoreOptions {
  /** An ioredis client the host owns, or a redis:// URL the store connects to (and quits). */
  redis: Redis | string;
  /**
   * Prefix of every key. Default "{whenthen:schedules}": the braces are a Redis Cluster hash tag,
   * keeping a schedule's hash and the two sorted sets in one slot, as the Lua scripts require.
   */
  prefix?: string;
  clock?: ScheduleClock;
}

/**
 * A script run by SHA, loaded on first NOSCRIPT: the body is sent once per server, not per call.
 * Every script reads and writes the schedule hash and both sorted sets in one atomic step.
 */
class LuaScript {
  readonly #sha: string;
  constructor(readonly lua: string) {
    this.#sha = createHash("sha1").update(lua).digest("hex");
  }

  async run(redis: Redis, keys: string[], args: Array<string | number>): Promise<unknown> {
    try {
      return await redis.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}

// KEYS: 1 schedule hash, 2 "next" zset (all ids by next run), 3 "enabled" zset (enabled ids by next run).
const ADD = new LuaScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
if ARGV[3] == '1' then redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1]) end
return 1`);

// ARGV: id, number of field/value pairs to set, the pairs, then the fields to clear.
const UPDATE = new LuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local n = tonumber(ARGV[2])
for i = 0, n - 1 do redis.call('HSET', KEYS[1], ARGV[3 + 2 * i], ARGV[4 + 2 * i]) end
for i = 3 + 2 * n, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
local nextRun = redis.call('HGET', KEYS[1], 'next_run_at')
redis.call('ZADD', KEYS[2], nextRun, ARGV[1])
if redis.call('HGET', KEYS[1], 'enabled') == '1' then
  redis.call('ZADD', KEYS[3], nextRun, ARGV[1])
else
  redis.call('ZREM', KEYS[3], ARGV[1])
end
return 1`);

// ARGV: id, expected next run (ms, as stored), new next run (ms). Compares the stored string
// exactly, so a caller holding a stale read can never advance the schedule.
const CLAIM = new LuaScript(`
if redis.call('HGET', KEYS[1], 'enabled') ~= '1' then return 0 end
if redis.call('HGET', KEYS[1], 'next_run_at') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'next_run_at', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
return 1`);

const DELETE = new LuaScript(`
local n = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return n`);

const PREFIX = /^[A-Za-z0-9_:{}.-]{1,64}$/;

/**
 * ioredis store: a hash per schedule, plus two sorted sets scored by next run (epoch ms, exact as
 * a double up to 2^53): every id, and enabled ids only, so `list({ enabled: true, due: true })`
 * is one ZRANGEBYSCORE over the due part. Nothing to migrate.
 */
export class RedisScheduleStore implements ScheduleAdapter {
  readonly redis: Redis;
  readonly prefix: string;
  readonly #ownsRedis: boolean;
  readonly #now: () => Date;

  constructor(options: RedisScheduleStoreOptions) {
    const prefix = options.prefix ?? "{whenthen:schedules}";
    if (!PREFIX.test(prefix)) {
      throw new ScheduleValidationError(`schedules(redis): invalid key prefix ${JSON.stringify(prefix)}: use 1–64 of A-Z a-z 0-9 _ : { } . -`);
    }
    this.prefix = prefix;
    const clock = options.clock;
    this.#now = clock ? () => clock.now() : systemNow;
    if (typeof options.redis === "string") {
      this.redis = new Redis(options.redis, { maxRetriesPerRequest: 2 });
      // Connection errors surface on the commands that fail; an unhandled 'error' event would
      // otherwise end the host process.
      this.redis.on("error", () => undefined);
      this.#ownsRedis = true;
    } else {
      this.redis = options.redis;
      this.#ownsRedis = false;
    }
  }

  #keys(id: string): string[] {
    return [`${this.prefix}:schedule:${id}`, `${this.prefix}:next`, `${this.prefix}:enabled`];
  }

  async add(schedule: Schedule): Promise<void> {
    const row = rowForAdd(schedule);
    const pairs: string[] = [];
    for (const column of COLUMNS) {
      const value = row[column];
      if (value !== null) pairs.push(column, String(value));
    }
    const added = await ADD.run(this.redis, this.#keys(schedule.id), [schedule.id, String(row.next_run_at), String(row.enabled), ...pairs]);
    if (added !== 1) {
      throw new ScheduleConflictError(`schedules(redis): a schedule with id ${JSON.stringify(schedule.id)} already exists`);
    }
  }

  async get(id: string): Promise<Schedule | null> {
    const hash = await this.redis.hgetall(this.#keys(id)[0] as string);
    return Object.keys(hash).length ? fromRow(rowFromHash(hash)) : null;
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    assertLimit(filter.limit);
    const kinds = kindList(filter.kind);
    if (kinds?.length === 0 || filter.limit === 0) return [];
    const source = filter.enabled === true ? `${this.prefix}:enabled` : `${this.prefix}:next`;
    const dueAt = filter.due ? (filter.now ?? this.#now()).getTime() : undefined;
    const max = dueAt ?? "+inf";
    const postFiltered = kinds !== undefined || filter.enabled === false;
    const limit = filter.limit ?? Infinity;
    // Without a post-filter one page of exactly `limit` is the answer; with one, pages repeat
    // until enough match, so the cost still follows the due range, not the store size.
    const pageSize = postFiltered || limit === Infinity ? Math.max(Math.min(limit, 1000), 100) : limit;
    const result: Schedule[] = [];
    const seen = new Set<string>();
    for (let offset = 0; result.length < limit; offset += pageSize) {
      const ids = await this.redis.zrangebyscore(source, "-inf", max, "LIMIT", offset, pageSize);
      if (ids.length === 0) break;
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.hgetall(this.#keys(id)[0] as string);
      const replies = (await pipeline.exec()) ?? [];
      for (const [err, hash] of replies) {
        if (err) throw err;
        const fields = hash as Record<string, string>;
        // A schedule deleted between the range read and the hash read comes back empty.
        if (Object.keys(fields).length === 0) continue;
        const schedule = fromRow(rowFromHash(fields));
        if (seen.has(schedule.id)) continue;
        seen.add(schedule.id);
        if (kinds !== undefined && !kinds.includes(schedule.kind)) continue;
        // The hash is the truth: a claim between the range read and the hash read moves it out.
        if (filter.enabled !== undefined && schedule.enabled !== filter.enabled) continue;
        if (dueAt !== undefined && schedule.nextRunAt.getTime() > dueAt) continue;
        result.push(schedule);
        if (result.length >= limit) break;
      }
      if (ids.length < pageSize) break;
    }
    return result;
  }

  async update(id: string, patch: SchedulePatch): Promise<boolean> {
    const columns = patchColumns(patch, this.#now());
    if (touchesTiming(patch)) {
      const current = await this.get(id);
      if (!current) return false;
      assertPatchedTiming(current, patch);
    }
    const sets = columns.filter(([, v]) => v !== null);
    const clears = columns.filter(([, v]) => v === null).map(([c]) => c);
    const updated = await UPDATE.run(this.redis, this.#keys(id), [id, sets.length, ...sets.flatMap(([c, v]) => [c, String(v)]), ...clears]);
    return updated === 1;
  }

  async delete(id: string): Promise<boolean> {
    return (await DELETE.run(this.redis, this.#keys(id), [id])) === 1;
  }

  async claimDue(id: string, expectedNextRunAt: Date, newNextRunAt: Date): Promise<boolean> {
    assertClaimDates(expectedNextRunAt, newNextRunAt);
    const claimed = await CLAIM.run(this.redis, this.#keys(id), [id, String(expectedNextRunAt.getTime()), String(newNextRunAt.getTime())]);
    return claimed === 1;
  }

  generateId(): string {
    return randomUUID();
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.redis.ping()) === "PONG";
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.#ownsRedis) await this.redis.quit();
  }

  /** Deletes every key of this prefix; for tests and uninstalls. */
  async drop(): Promise<void> {
    const next = `${this.prefix}:next`;
    for (;;) {
      const ids = await this.redis.zrange(next, 0, 499);
      if (ids.length === 0) break;
      await this.redis.del(...ids.map((id) => this.#keys(id)[0] as string));
      await this.redis.zrem(next, ...ids);
    }
    await this.redis.del(next, `${this.prefix}:enabled`);
  }
}

function rowFromHash(hash: Record<string, string>): ScheduleRow {
  const optional = (column: Column): string | null => hash[column] ?? null;
  return {
    id: hash.id ?? "",
    kind: hash.kind ?? "",
    target: hash.target ?? "",
    interval_spec: optional("interval_spec"),
    cron_expr: optional("cron_expr"),
    time_zone: optional("time_zone"),
    input_json: optional("input_json"),
    enabled: Number(hash.enabled),
    next_run_at: hash.next_run_at ?? "NaN",
    last_run_at: optional("last_run_at"),
    last_run_status: optional("last_run_status"),
    last_run_id: optional("last_run_id"),
    created_at: hash.created_at ?? "NaN",
    updated_at: hash.updated_at ?? "NaN",
    created_by: optional("created_by"),
  };
}
