import { randomInt } from "node:crypto";
import type pg from "pg";
import type { Logger } from "../../../core/log";
import type { LivenessSession } from "../types";
import { pgDriver } from "./driver";
import { assertSchema } from "./pool";

/**
 * The first half of every worker's session-level advisory lock, pg_advisory_lock(int4, int4): "whnt"
 * as a 32-bit integer, so the app's locks are told apart from anyone else's in pg_locks (the
 * migration lock is a one-key bigint lock, shown with another objsubid).
 */
export const LIVENESS_LOCK_CLASS = 0x77686e74;

/** Keys whose lock no session holds, among those asked about, in this database. $1 class, $2 keys. */
const FREE_KEYS = `SELECT k FROM unnest($2::int[]) AS k
  WHERE NOT EXISTS (SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = ($1::bigint & 4294967295)::oid
      AND l.objid = (k::bigint & 4294967295)::oid AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`;

/**
 * A worker's liveness session (LivenessSession): one connection of its own, outside the pool,
 * that takes a session-level advisory lock under a random key and keeps it for the worker's life.
 * When the process dies the connection closes and the server drops the lock at once; the other
 * workers see the key free in pg_locks (an in-memory view: no table read, no write). The
 * connection needs a real session, as LISTEN does: DATABASE_LISTEN_URL when the main URL goes
 * through a transaction-mode pooler.
 *
 * A session cut while the process lives (the server restarted) is opened again every `retryMs`
 * and takes its key back; meanwhile `key()` is null, and the worker says so at its next heartbeat.
 */
export function openLivenessSession(opts: { url: string; schema?: string; log?: Logger; retryMs?: number }): LivenessSession {
  const retryMs = opts.retryMs ?? 500;
  let client: pg.Client | null = null;
  let key: number | null = null;
  let wanted = randomInt(1, 0x7fffffff);
  let heldSince: number | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  let failures = 0;

  const down = (c: pg.Client) => {
    if (client !== c) return;
    client = null;
    key = null;
    heldSince = null;
    void c.end().catch(() => undefined);
    schedule();
  };
  const schedule = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      void connect();
    }, retryMs);
    timer.unref();
  };
  const connect = async () => {
    const c = new (pgDriver().Client)({
      connectionString: opts.url,
      application_name: "whenthen-liveness",
      options: opts.schema ? `-c search_path=${assertSchema(opts.schema)}` : undefined,
    });
    c.on("error", (err) => {
      if (client === c) opts.log?.warn("postgres: the worker's liveness session was cut; opening it again", { error: err.message });
      down(c);
    });
    try {
      await c.connect();
      // Our own key again after a cut; another, when some other session holds it (a collision).
      for (let tries = 0; ; tries++) {
        const r = await c.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1::int, $2::int) AS ok", [LIVENESS_LOCK_CLASS | 0, wanted]);
        if (r.rows[0]?.ok) break;
        if (tries >= 5) throw new Error("postgres: no free key for the worker's liveness lock");
        wanted = randomInt(1, 0x7fffffff);
      }
      if (closed) {
        await c.end();
        return;
      }
      client = c;
      key = wanted;
      heldSince = Date.now();
      if (failures > 0) opts.log?.info("postgres: the worker's liveness session is back", { failures });
      failures = 0;
    } catch (err) {
      void c.end().catch(() => undefined);
      if (failures++ === 0) opts.log?.warn("postgres: could not open the worker's liveness session; retrying", { error: (err as Error).message });
      schedule();
    }
  };
  void connect();

  return {
    key: () => key,
    heldSince: () => heldSince,
    async free(keys) {
      const c = client;
      if (!c) return null;
      if (keys.length === 0) return [];
      try {
        return (await c.query<{ k: number }>(FREE_KEYS, [LIVENESS_LOCK_CLASS, keys])).rows.map((r) => r.k);
      } catch {
        // The session broke under the question: it says nothing about the others.
        return null;
      }
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      key = null;
      await c?.end().catch(() => undefined);
    },
  };
}
