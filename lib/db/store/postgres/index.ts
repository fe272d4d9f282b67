import type pg from "pg";
import { isDatabaseError } from "../../../core/errors";
import type { Logger } from "../../../core/log";
import type { AlertPolicy, AppletsStore, Store, StoreAggregates } from "../types";
import { alertRecorder, alertsStore, type AlertRecorder } from "./alerts";
import { apiTokensStore } from "./api-tokens";
import { appletsStore } from "./applets";
import { eventFilesStore } from "./event-files";
import { firesStore } from "./fires";
import { cachedForHook } from "./hook-cache";
import { checkInstanceKeys, type InstanceKeys } from "./instance";
import { jobLocksStore } from "./job-locks";
import { createListener, type Listener } from "./listen";
import { openLivenessSession } from "./liveness";
import { maintenanceStore } from "./maintenance";
import { defaultPgMigrationsDir, migratePostgres } from "./migrate";
import { plannedRunsStore } from "./planned-runs";
import { createPool, inTransaction, query, storeError, type Begin, type Queryable } from "./pool";
import * as Q from "./queue-sql";
import { runControlsStore } from "./run-controls";
import { runsStore } from "./runs";
import { secretsStore } from "./secrets";
import { seedStore } from "./seed";
import { triggerStateStore } from "./trigger-state";
import { usersStore } from "./users";
import { waitsStore } from "./waits";
import { workersStore } from "./workers";


/**
 * The named jobs of the spec, and the queue's vacuum (lib/queue/vacuum.ts, PostgreSQL only); one row
 * each so a lock is always a single UPDATE (as on SQLite).
 */
const JOB_NAMES = ["scheduler_tick", "retention", "worker_heartbeat", "alerts", "queue_vacuum"] as const;

export interface PostgresStoreOptions {
  url: string;
  /** DATABASE_LISTEN_URL: a direct (session) connection for LISTEN; default `url`. */
  listenUrl?: string;
  poolSize?: number;
  /** The app's tables live in this schema (tests); default the connection's search_path. */
  schema?: string;
  migrationsDir?: string;
  /** Checked against the fingerprints the database was initialised with (never stored themselves). */
  keys?: InstanceKeys;
  /** Tests: create `schema` if missing before migrating, and drop it (with everything in it) on close. */
  ownSchema?: boolean;
  log?: Logger;
  /** What a settle or a stored poll means for alerts, recorded in its transaction (lib/alerts/policy.ts's `alertPolicy`). */
  alertPolicy: AlertPolicy;
}

export interface PostgresStore extends Store {
  /** Migrations applied and keys checked; rejects with the reason the process must not start. */
  ready(): Promise<void>;
  /** The pool, for `@whenthen/schedules`' PostgresScheduleStore (one driver, one pool per process). */
  readonly pool: pg.Pool;
  notifications: NonNullable<Store["notifications"]>;
}

/**
 * The PostgreSQL store: the same aggregates as SQLite's, over a node-postgres pool (the driver the
 * bench chose, bench/RESULTS.md "pg-drivers"). Migrations run on open under an advisory lock and
 * the keys are checked against the database; every call waits for that, so a process whose
 * SECRETS_KEY differs from the database's never writes with it.
 *
 * Differences from SQLite, all in this folder: timestamps and JSON keep SQLite's shapes (see
 * lib/db/store/postgres/schema.ts); the claim takes FOR UPDATE SKIP LOCKED and a unique index enforces one
 * running run per applet (queue-sql.ts); group commit is one multi-row statement; NOTIFY
 * (triggers, drizzle-pg/0013) replaces polling for wake-ups.
 */
export function openPostgresStore(opts: PostgresStoreOptions): PostgresStore {
  const pool = createPool({ url: opts.url, max: opts.poolSize ?? 10, schema: opts.schema, log: opts.log });
  const initialise = async () => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw storeError(err);
    }
    let failure: Error | undefined;
    try {
      await migratePostgres(
        {
          exec: async (t) => (await client.query<Record<string, unknown>>(t)).rows ?? [],
          query: async (t, p) => (await client.query<Record<string, unknown>>(t, p)).rows,
        },
        opts.migrationsDir ?? defaultPgMigrationsDir(),
        { jobNames: JOB_NAMES, schema: opts.schema },
      );
      if (opts.keys) await checkInstanceKeys(client, opts.keys, new Date());
    } catch (err) {
      failure = err as Error;
      throw storeError(err);
    } finally {
      // A client that failed here (its connection cut, as likely as not) is dropped, not reused.
      client.release(failure);
    }
  };
  let init = initialise();
  init.catch(() => undefined);
  // A server that was away at start (not up yet, refusing the login, out of connections) is tried
  // again by the next call: migrations and the key check are idempotent. Any other failure (keys
  // that differ, a migration that fails) stays: the process must not start.
  const ready = async (): Promise<void> => {
    const current = init;
    try {
      await current;
    } catch (err) {
      if (isDatabaseError(err) && init === current && !closing) {
        init = initialise();
        init.catch(() => undefined);
      }
      throw err;
    }
  };
  let closing = false;

  // Every call on the store waits for init.
  const readyPool = waitingFor(pool, ready);

  let listener: Listener | null = null;
  const listen = () => (listener ??= createListener({ url: opts.listenUrl ?? opts.url, schema: opts.schema, log: opts.log }));

  const alerts = alertRecorder(opts.alertPolicy);
  const root = aggregates(readyPool, (fn) => inTransaction(readyPool, fn), alerts);
  const { applets, hooks } = hookCached(root.applets, listen);
  return {
    engine: "postgres",
    pool,
    ready,
    ...root,
    applets,
    // A worker's liveness lock needs a real session, as LISTEN does (DATABASE_LISTEN_URL).
    workers: { ...root.workers, openLivenessSession: () => openLivenessSession({ url: opts.listenUrl ?? opts.url, schema: opts.schema, log: opts.log }) },
    maintenance: maintenanceStore(readyPool),
    notifications: {
      onQueued: (fn) => listen().on(Q.QUEUED_CHANNEL, () => fn()),
      onRunChanged: (fn) => listen().on(Q.RUNS_CHANNEL, () => fn()),
      watchRuns: async (watcherId, forMs) => void (await query(readyPool, Q.WATCH_RUNS, [watcherId, forMs / 1000])),
      watchQueue: async (workerId, forMs, { settle = true } = {}) => {
        await query(readyPool, Q.WATCH_QUEUE, [workerId, forMs / 1000]);
        if (settle) await transactionsEnded(readyPool);
      },
      unwatchQueue: async (workerId) => void (await query(readyPool, Q.UNWATCH_QUEUE, [workerId])),
    },
    transaction: async (fn) => {
      try {
        return await inTransaction(readyPool, (client) => fn(aggregates(client, (inner) => inner(client), alerts)));
      } finally {
        hooks.drop(); // what it wrote is not known here: the next requests read their applets again
      }
    },
    close: async () => {
      closing = true;
      await init.catch(() => undefined);
      await listener?.close();
      if (opts.schema && opts.ownSchema) await pool.query(`DROP SCHEMA IF EXISTS ${opts.schema} CASCADE`).catch(() => undefined);
      await pool.end();
    },
  };
}

/** The pool seen through `ready`: every query and checkout waits for migrations and the key check. */
function waitingFor(pool: pg.Pool, ready: () => Promise<void>): pg.Pool {
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === "query")
        return async (...args: unknown[]) => {
          await ready();
          try {
            return await (target.query as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          } catch (err) {
            throw storeError(err);
          }
        };
      if (prop === "connect")
        return async () => {
          await ready();
          try {
            return await target.connect();
          } catch (err) {
            throw storeError(err);
          }
        };
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

/**
 * Webhook requests read their applet from this process's cache (hook-cache.ts); this process's
 * own writes to applets drop it at once, the other processes' through NOTIFY.
 */
function hookCached(base: AppletsStore, listen: () => Listener) {
  const hooks = cachedForHook((id) => base.forHook(id), listen);
  const dropping = async <R>(write: Promise<R>, id: string): Promise<R> => {
    try {
      return await write;
    } finally {
      hooks.drop(id);
    }
  };
  const applets: typeof base = {
    ...base,
    forHook: (id) => hooks.forHook(id),
    update: (a) => dropping(base.update(a), a.id),
    setEnabled: (id, enabled, now) => dropping(base.setEnabled(id, enabled, now), id),
    setWebhookToken: (id, token) => dropping(base.setWebhookToken(id, token), id),
    setListening: (id, until) => dropping(base.setListening(id, until), id),
    takeListening: (id, now) => dropping(base.takeListening(id, now), id),
    delete: (id) => dropping(base.delete(id), id),
  };
  return { applets, hooks };
}

/**
 * Resolves when every transaction in progress now has ended, or after `capMs` (a transaction an
 * operator left open, a prepared one): a transaction that looked for a queue watcher before the
 * caller's row went in, and so announced nothing, has committed by then, and a look at the queue
 * after this sees what it queued.
 */
async function transactionsEnded(q: Queryable, capMs = 1_000): Promise<void> {
  const { snapshot } = (await query<{ snapshot: string }>(q, Q.IN_PROGRESS)).rows[0]!;
  const deadline = performance.now() + capMs;
  // Nothing else in progress: a snapshot whose xip list is empty ("xmin:xmax:").
  if (snapshot.endsWith(":")) return;
  while (!(await query<{ ended: boolean }>(q, Q.ENDED, [snapshot])).rows[0]!.ended && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * The aggregates over `q`: the pool (autocommit, `begin` opens a transaction of its own) or one
 * client inside a transaction (`begin` runs on it: a method that is a transaction joins the outer one).
 * `alerts` records, inside the settles and `savePolled`, what the store's alert policy decides.
 */
function aggregates(q: Queryable, begin: Begin, alerts: AlertRecorder): StoreAggregates {
  return {
    applets: appletsStore(q, begin),
    triggerState: triggerStateStore(q, begin, alerts),
    runs: runsStore(q, begin, alerts),
    plannedRuns: plannedRunsStore(q, begin),
    secrets: secretsStore(q),
    users: usersStore(q, begin),
    jobLocks: jobLocksStore(q),
    workers: workersStore(q, begin),
    seed: seedStore(q),
    apiTokens: apiTokensStore(q),
    eventFiles: eventFilesStore(q),
    alerts: alertsStore(q, begin),
    fires: firesStore(q),
    runControls: runControlsStore(q, begin),
    waits: waitsStore(q, begin),
  };
}

export type { InstanceKeys } from "./instance";
