import { toClaimed, toRun as toRunRow, type RunRowRaw } from "../run-row";
import { applyPlanOn, plannedRunsStore } from "./planned-runs";
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { isDatabaseError } from "../../../core/errors";
import { newId } from "../../../core/ids";
import type { Logger } from "../../../core/log";
import type { RunStatus, Step } from "../types/runs";
import type { TriggerState } from "../types/trigger-state";
import {
  SYSTEM_AUTHOR,
  type AppletVersion,
  type VersionAuthor,
  type VersionSource,
} from "../types";
import type {
  Applet,
  AppletInsert,
  ApiTokenRow,
  ApiTokensStore,
  AppletsStore,
  ClaimedRun,
  FinalStatus,
  Heartbeat,
  Ingested,
  IngestInput,
  JobLocksStore,
  MaintenanceStore,
  RecoveredRun,
  Run,
  RunChange,
  RunListFilter,
  RunsStore,
  SecretsStore,
  SeedStore,
  Store,
  StoreAggregates,
  TriggerOverview,
  TriggerStateStore,
  User,
  UsersStore,
  WorkersStore,
  EventRun,
  RunPage,
} from "../types";
import { eventFilesStore } from "./event-files";
import { firesStore } from "./fires";
import { ingestControlled, runControlsStore } from "./run-controls";
import { waitsStore } from "./waits";
import { RUN_SEARCH_PAYLOAD_BYTES, RUN_SEARCH_SCAN } from "../types";
import { checkInstanceKeys, type InstanceKeys } from "./instance";
import { createListener, type Listener } from "./listen";
import { openLivenessSession } from "./liveness";
import { cachedForHook } from "./hook-cache";
import { defaultPgMigrationsDir, migratePostgres } from "./migrate";
import { createLanes } from "./settles";
import { createPool, inTransaction, query, queryDynamic, sqlState, storeError, type Queryable } from "./pool";
import * as Q from "./queue-sql";
import { alertsStore, recordPolled, recordRetrying, recordSettled } from "./alerts";
import { readAppletChannel } from "../alert-row";
import { settleNeedsAlertState } from "../../../alerts/policy";

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
 * lib/db/pg-schema.ts); the claim takes FOR UPDATE SKIP LOCKED and a unique index enforces one
 * running run per applet (queue-sql.ts); group commit is one multi-row statement; NOTIFY
 * (triggers, drizzle-pg/0013) replaces polling for wake-ups.
 */
export function openPostgresStore(opts: PostgresStoreOptions): PostgresStore {
  const pool = createPool({ url: opts.url, max: opts.poolSize ?? 10, schema: opts.schema });
  const initialise = async () => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw storeError(err);
    }
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
      throw storeError(err);
    } finally {
      client.release();
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

  // Every call on the store waits for init: a pool wrapper whose query does.
  const readyPool = new Proxy(pool, {
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

  let listener: Listener | null = null;
  const listen = () => (listener ??= createListener({ url: opts.listenUrl ?? opts.url, schema: opts.schema, log: opts.log }));

  const root = aggregates(readyPool, (fn) => inTransaction(readyPool, fn));
  // Webhook requests read their applet from this process's cache (hook-cache.ts); this process's
  // own writes to applets drop it at once, the other processes' through NOTIFY.
  const base = root.applets;
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
        return await inTransaction(readyPool, (client) => fn(aggregates(client, (inner) => inner(client))));
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
 */
function aggregates(q: Queryable, begin: <T>(fn: (client: Queryable) => Promise<T>) => Promise<T>): StoreAggregates {
  return {
    applets: appletsStore(q, begin),
    triggerState: triggerStateStore(q, begin),
    runs: runsStore(q, begin),
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

// ---------------------------------------------------------------------------------------------

interface AppletRaw {
  id: string;
  name: string;
  enabled: number;
  trigger_type: string;
  definition: Record<string, unknown>;
  webhook_token: string;
  last_fired_at: string | null;
  run_count: number;
  tags: unknown;
  failure_streak: number;
  alert_open: number;
  trigger_alert_open: number;
  alert_channel: unknown;
  auto_pause: number | null;
  paused_reason: string | null;
  paused_at: string | null;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
  version: number | null;
}

interface VersionRaw {
  applet_id: string;
  version: number;
  name: string;
  enabled: number;
  definition: Record<string, unknown>;
  source: string;
  restored_from: number | null;
  author_type: string;
  author_id: string | null;
  author_label: string;
  created_at: string;
}

/** The applet's current version, read in the same statement as its row. */
const APPLET_COLUMNS = "applets.*, (SELECT MAX(v.version) FROM applet_versions v WHERE v.applet_id = applets.id) AS version";

const toVersion = (r: VersionRaw): AppletVersion => ({
  appletId: r.applet_id,
  version: r.version,
  name: r.name,
  enabled: r.enabled === 1,
  definition: r.definition,
  source: r.source as VersionSource,
  restoredFrom: r.restored_from,
  author: { kind: r.author_type as VersionAuthor["kind"], id: r.author_id, label: r.author_label },
  createdAt: r.created_at,
});

const toApplet = (r: AppletRaw): Applet => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled === 1,
  triggerType: r.trigger_type,
  definition: r.definition,
  webhookToken: r.webhook_token,
  lastFiredAt: r.last_fired_at,
  runCount: r.run_count,
  tags: Array.isArray(r.tags) ? (r.tags as unknown[]).filter((t): t is string => typeof t === "string") : [],
  failureStreak: r.failure_streak,
  alertOpen: r.alert_open === 1,
  triggerAlertOpen: r.trigger_alert_open === 1,
  alertChannel: readAppletChannel(r.alert_channel),
  autoPause: r.auto_pause === null ? null : r.auto_pause === 1,
  pausedReason: r.paused_reason,
  pausedAt: r.paused_at,
  disabledAt: r.disabled_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  version: r.version ?? 0,
});

const appletParams = (a: AppletInsert) => [a.id, a.name, a.enabled ? 1 : 0, a.triggerType, JSON.stringify(a.definition), a.webhookToken, a.now, a.createdAt ?? a.now, a.tags === undefined ? null : JSON.stringify(a.tags)];

/**
 * Enabling clears an auto-pause and starts the failure streak over, and disabling an enabled
 * applet records when (as on SQLite). `p` is the enabled parameter, `now` the time's.
 */
const unpause = (p: string, now: string) => `paused_reason = CASE WHEN ${p}::int = 1 THEN NULL ELSE paused_reason END,
  paused_at = CASE WHEN ${p}::int = 1 THEN NULL ELSE paused_at END,
  failure_streak = CASE WHEN ${p}::int = 1 AND enabled = 0 THEN 0 ELSE failure_streak END,
  disabled_at = CASE WHEN ${p}::int = 1 THEN NULL WHEN enabled = 1 THEN ${now}::text ELSE disabled_at END`;

/**
 * The next version of the applet, numbered in the statement that writes it. Run after the
 * applet's own INSERT or UPDATE in the same transaction: the UPDATE's row lock makes a second save
 * of the same applet wait for this one's commit, and its INSERT then sees this version (READ
 * COMMITTED reads per statement), so two saves never take the same number; the unique index says so too.
 */
const insertVersion = (c: Queryable, a: AppletInsert, source: VersionSource) => {
  const author = a.author ?? SYSTEM_AUTHOR;
  return query(
    c,
    `INSERT INTO applet_versions (id, applet_id, version, name, enabled, definition, source, restored_from, author_type, author_id, author_label, created_at, updated_at)
     SELECT $1, $2::text, COALESCE(MAX(version), 0) + 1, $3, $4, $5::json, $6, $7, $8, $9, $10, $11, $11
     FROM applet_versions WHERE applet_id = $2::text`,
    [newId(), a.id, a.name, a.enabled ? 1 : 0, JSON.stringify(a.definition), a.source ?? source, a.restoredFrom ?? null, author.kind, author.id, author.label, a.now],
  );
};

function appletsStore(q: Queryable, begin: <T>(fn: (client: Queryable) => Promise<T>) => Promise<T>): AppletsStore {
  return {
    get: async (id) => {
      const r = (await query<AppletRaw>(q, `SELECT ${APPLET_COLUMNS} FROM applets WHERE id = $1`, [id])).rows[0];
      return r ? toApplet(r) : null;
    },
    list: async () => (await query<AppletRaw>(q, `SELECT ${APPLET_COLUMNS} FROM applets ORDER BY created_at, id`)).rows.map(toApplet),
    listByTriggerType: async (type, opts = {}) =>
      (await query<AppletRaw>(q, `SELECT ${APPLET_COLUMNS} FROM applets WHERE trigger_type = $1 AND enabled >= $2`, [type, opts.includeDisabled ? 0 : 1])).rows.map(toApplet),
    insert: (a) =>
      begin(async (c) => {
        await query(
          c,
          `INSERT INTO applets (id, name, enabled, trigger_type, definition, webhook_token, run_count, tags, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5::json, $6, 0, COALESCE($9::json, '[]'::json), $8, $7)`,
          appletParams(a),
        );
        await insertVersion(c, a, "create");
      }),
    update: (a) =>
      begin(async (c) => {
        const changed =
          ((
            await query(
              c,
              `UPDATE applets SET name = $2, enabled = $3, trigger_type = $4, definition = $5::json, webhook_token = $6, updated_at = $7, tags = COALESCE($8::json, tags), ${unpause("$3", "$7")} WHERE id = $1`,
              [...appletParams(a).slice(0, 7), a.tags === undefined ? null : JSON.stringify(a.tags)],
            )
          ).rowCount ?? 0) > 0;
        if (changed) await insertVersion(c, a, "save");
        return changed;
      }),
    versions: async (id) =>
      (await query<VersionRaw>(q, "SELECT * FROM applet_versions WHERE applet_id = $1 ORDER BY version DESC", [id])).rows.map(toVersion),
    version: async (id, version) => {
      const r = (await query<VersionRaw>(q, "SELECT * FROM applet_versions WHERE applet_id = $1 AND version = $2", [id, version])).rows[0];
      return r ? toVersion(r) : null;
    },
    rewriteVersion: async (id, version, definition, now) =>
      ((await query(q, "UPDATE applet_versions SET definition = $1::json, updated_at = $2 WHERE applet_id = $3 AND version = $4", [JSON.stringify(definition), now, id, version])).rowCount ?? 0) > 0,
    setEnabled: async (id, enabled, now) =>
      ((await query(q, `UPDATE applets SET ${unpause("$1", "$2")}, enabled = $1, updated_at = $2 WHERE id = $3`, [enabled ? 1 : 0, now, id])).rowCount ?? 0) > 0,
    byWebhookToken: async (token) => (await query<{ id: string; name: string }>(q, "SELECT id, name FROM applets WHERE webhook_token = $1", [token])).rows[0] ?? null,
    setWebhookToken: async (id, token) => ((await query(q, "UPDATE applets SET webhook_token = $1 WHERE id = $2", [token, id])).rowCount ?? 0) > 0,
    delete: async (id) => ((await query(q, "DELETE FROM applets WHERE id = $1", [id])).rowCount ?? 0) > 0,
    forHook: async (id) => {
      const r = (
        await query<{ id: string; enabled: number; webhook_token: string; definition: string; listen_until: string | null }>(
          q,
          "SELECT id, enabled, webhook_token, definition::text AS definition, listen_until FROM applets WHERE id = $1",
          [id],
        )
      ).rows[0];
      return r ? { id: r.id, enabled: r.enabled === 1, webhookToken: r.webhook_token, definition: r.definition, listenUntil: r.listen_until } : null;
    },
    setListening: async (id, until) => ((await query(q, "UPDATE applets SET listen_until = $1 WHERE id = $2", [until, id])).rowCount ?? 0) > 0,
    // ISO times compare as text (one format, toISOString's).
    takeListening: async (id, now) => ((await query(q, "UPDATE applets SET listen_until = NULL WHERE id = $1 AND listen_until > $2", [id, now])).rowCount ?? 0) > 0,
    eventIds: async (id) => (await query<{ id: string }>(q, "SELECT id FROM events WHERE applet_id = $1", [id])).rows.map((r) => r.id),
  };
}

// ---------------------------------------------------------------------------------------------

interface StateRaw {
  next_run_at: string | null;
  last_polled_at: string | null;
  seen_keys: string[];
  last_value: unknown;
  etag: string | null;
  last_modified: string | null;
  last_error: string | null;
  error_count: number;
}

const toState = (r: StateRaw): TriggerState => ({
  nextRunAt: r.next_run_at,
  lastPolledAt: r.last_polled_at,
  seenKeys: r.seen_keys,
  lastValue: r.last_value ?? null,
  etag: r.etag,
  lastModified: r.last_modified,
  lastError: r.last_error,
  errorCount: r.error_count,
});

/** $1 applet, $2 last polled, $3 seen keys, $4 last value, $5 etag, $6 last modified, $7 last error, $8 error count, $9 now. */
const stateParams = (appletId: string, s: Omit<TriggerState, "nextRunAt">, now: string) => [
  appletId,
  s.lastPolledAt,
  JSON.stringify(s.seenKeys),
  s.lastValue === undefined || s.lastValue === null ? null : JSON.stringify(s.lastValue),
  s.etag,
  s.lastModified,
  s.lastError,
  s.errorCount,
  now,
];

interface ScheduledRaw {
  applet_id: string;
  trigger_type: string;
  definition: string;
  enabled: number;
  next_run_at: string;
  error_count: number;
  created_at: string;
  updated_at: string;
}

function triggerStateStore(q: Queryable, begin: <T>(fn: (client: Queryable) => Promise<T>) => Promise<T>): TriggerStateStore {
  return {
    get: async (appletId) => {
      const r = (await query<StateRaw>(q, "SELECT * FROM trigger_state WHERE applet_id = $1", [appletId])).rows[0];
      return r ? toState(r) : null;
    },
    save: async (appletId, s, now) => {
      await query(
        q,
        `INSERT INTO trigger_state (applet_id, next_run_at, last_polled_at, seen_keys, last_value, etag, last_modified, last_error, error_count, created_at, updated_at)
         VALUES ($1, $10, $2, $3::json, $4::json, $5, $6, $7, $8, $9, $9)
         ON CONFLICT (applet_id) DO UPDATE SET next_run_at = excluded.next_run_at, last_polled_at = excluded.last_polled_at,
           seen_keys = excluded.seen_keys, last_value = excluded.last_value, etag = excluded.etag, last_modified = excluded.last_modified,
           last_error = excluded.last_error, error_count = excluded.error_count, updated_at = excluded.updated_at`,
        [...stateParams(appletId, s, now), s.nextRunAt],
      );
    },
    setNextRunAt: async (appletId, nextRunAt, now) => {
      await query(
        q,
        `INSERT INTO trigger_state (applet_id, next_run_at, created_at, updated_at) VALUES ($1, $2, $3, $3)
         ON CONFLICT (applet_id) DO UPDATE SET next_run_at = excluded.next_run_at, updated_at = excluded.updated_at`,
        [appletId, nextRunAt, now],
      );
    },
    claimSlot: async (appletId, expected, next, now) =>
      (await query(q, "UPDATE trigger_state SET next_run_at = $1, updated_at = $2 WHERE applet_id = $3 AND next_run_at IS NOT DISTINCT FROM $4::text", [next, now, appletId, expected]))
        .rowCount === 1,
    claimDue: async (appletId, expected, next, now) =>
      (
        await query(
          q,
          "UPDATE trigger_state SET next_run_at = $1, pending_slot = $4, updated_at = $2 WHERE applet_id = $3 AND next_run_at IS NOT DISTINCT FROM $4::text",
          [next, now, appletId, expected],
        )
      ).rowCount === 1,
    savePolled: (appletId, s, now, slot = null) =>
      begin(async (c) => {
        const before = (await query<{ error_count: number }>(c, "SELECT error_count FROM trigger_state WHERE applet_id = $1 FOR UPDATE", [appletId])).rows[0]?.error_count ?? 0;
        const ok = (
        await query(
          c,
          `UPDATE trigger_state SET last_polled_at = $2, seen_keys = $3::json, last_value = $4::json, etag = $5, last_modified = $6,
             last_error = $7, error_count = $8, updated_at = $9,
             pending_slot = CASE WHEN pending_slot = $10::text THEN NULL ELSE pending_slot END
           WHERE applet_id = $1`,
          [...stateParams(appletId, s, now), slot],
        )
      ).rowCount === 1;
        if (ok) await recordPolled(c, appletId, before, s.errorCount, s.lastError, now);
        return ok;
      }),
    listPending: async () =>
      (
        await query<{ applet_id: string; trigger_type: string; pending_slot: string }>(
          q,
          `SELECT ts.applet_id, a.trigger_type, ts.pending_slot FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
           WHERE ts.pending_slot IS NOT NULL`,
        )
      ).rows,
    clearPending: async (appletId, slot) => {
      await query(q, "UPDATE trigger_state SET pending_slot = NULL WHERE applet_id = $1 AND pending_slot = $2", [appletId, slot]);
    },
    setLastError: async (appletId, error, now) => {
      await query(q, "UPDATE trigger_state SET last_error = $1, updated_at = $2 WHERE applet_id = $3", [error, now, appletId]);
    },
    lastErrors: async () =>
      (
        await query<{ appletId: string; lastError: string }>(
          q,
          `SELECT applet_id AS "appletId", last_error AS "lastError" FROM trigger_state WHERE last_error IS NOT NULL ORDER BY applet_id`,
        )
      ).rows,
    overview: async () =>
      (
        await query<TriggerOverview>(
          q,
          `SELECT applet_id AS "appletId", last_error AS "lastError", error_count AS "errorCount", next_run_at AS "nextRunAt", last_polled_at AS "lastPolledAt"
           FROM trigger_state WHERE last_error IS NOT NULL OR next_run_at IS NOT NULL ORDER BY applet_id`,
        )
      ).rows,
    listScheduled: async (opts) => {
      if (opts.types.length === 0) return [];
      const due = opts.dueAt !== undefined;
      const rows = (
        await query<ScheduledRaw>(
          q,
          `SELECT ts.applet_id, a.trigger_type, a.definition::text AS definition, a.enabled, ts.next_run_at, ts.error_count, a.created_at, ts.updated_at
           FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
           WHERE ts.next_run_at IS NOT NULL AND ($1::text IS NULL OR ts.next_run_at <= $1::text)
             AND a.trigger_type = ANY($2::text[]) AND ($3::boolean IS FALSE OR a.enabled = 1)
           ORDER BY ts.next_run_at, ts.applet_id
           LIMIT $4::int`,
          [due ? opts.dueAt : null, [...opts.types], opts.enabledOnly ?? false, opts.limit ?? null],
        )
      ).rows;
      return rows.map((r) => ({ ...r, enabled: r.enabled === 1 }));
    },
    listUnscheduled: async (types) =>
      (
        await query<{ applet_id: string; trigger_type: string; definition: string }>(
          q,
          `SELECT ts.applet_id, a.trigger_type, a.definition::text AS definition FROM trigger_state ts JOIN applets a ON a.id = ts.applet_id
           WHERE ts.next_run_at IS NULL AND a.enabled = 1 AND a.trigger_type = ANY($1::text[])`,
          [[...types]],
        )
      ).rows,
  };
}

// ---------------------------------------------------------------------------------------------

/** The shared row, with the claim token the PostgreSQL queue reads back. */
interface RunRaw extends RunRowRaw {
  claim_token: string | null;
}

/** A claim's row: the run, its event's and applet's columns (null when gone) and the replay flag (Q.CLAIM). */
interface ClaimRaw extends RunRaw {
  ev_id: string | null;
  ev_applet_id: string;
  ev_source: string;
  ev_dedupe_key: string | null;
  ev_payload: string;
  ev_received_at: string;
  ap_id: string | null;
  ap_name: string;
  ap_definition: string;
  ap_updated_at: string;
  replay: boolean;
}

/** Steps are read as text and parsed here: an unreadable value fails the run (stepsError), never the claim. */
function readSteps(text: string): { steps: Step[]; stepsError?: string } {
  try {
    const steps = JSON.parse(text) as unknown;
    return Array.isArray(steps) ? { steps: steps as Step[] } : { steps: [], stepsError: "could not read the stored steps: not a JSON array" };
  } catch (err) {
    return { steps: [], stepsError: `could not read the stored steps: not valid JSON (${(err as Error).message})` };
  }
}

const toRun = (r: RunRaw): Run => toRunRow(r, readSteps);
const toClaimedRun = (r: ClaimRaw, token: string): ClaimedRun =>
  toClaimed(toRun(r), token, {
    event: r.ev_id === null ? null : { id: r.ev_id, applet_id: r.ev_applet_id, source: r.ev_source, dedupe_key: r.ev_dedupe_key, payload: r.ev_payload, received_at: r.ev_received_at },
    applet: r.ap_id === null ? null : { id: r.ap_id, name: r.ap_name, definition: r.ap_definition, updated_at: r.ap_updated_at },
    replay: r.replay,
  });

/** Two claims raced for one applet and this one lost on runs_running_idx: claim again. */
const lostRace = (err: unknown) => sqlState(err) === "23505" && (err as { constraint?: string }).constraint === "runs_running_idx";

/** `fn` again while it loses that race (nothing of its statement went in), three times at most; undefined after the third. */
async function unlessRaced<T>(fn: () => Promise<T>): Promise<T | undefined> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!lostRace(err)) throw err;
    }
  }
  return undefined;
}

const encodeCursor = (createdAt: string, id: string) => Buffer.from(`${createdAt}|${id}`).toString("base64url");
function decodeCursor(cursor: string): [string, string] {
  const [createdAt = "", id = ""] = Buffer.from(cursor, "base64url").toString().split("|");
  return [createdAt, id];
}

function runsStore(q: Queryable, begin: <T>(fn: (client: Queryable) => Promise<T>) => Promise<T>): RunsStore {
  const ingestRow = async (c: Queryable, i: IngestInput): Promise<Ingested> => {
    const eventId = i.eventId ?? newId();
    const runId = newId();
    const r = await query(c, Q.INGEST, [eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, runId, i.maxAttempts]);
    return r.rowCount === 1 ? { eventId, runId } : null;
  };
  // Timed actions: the plan goes in the event's transaction, only when the event was stored.
  const ingestOne = async (c: Queryable, i: IngestInput): Promise<Ingested> => {
    if (i.controls) {
      const controlled = (tx: Queryable) => ingestControlled(tx, i, async (tx2) => void (await applyPlanOn(tx2, i.plan!)));
      return c === q ? begin(controlled) : controlled(c);
    }
    const plan = i.plan;
    if (!plan) return ingestRow(c, i);
    const run = async (tx: Queryable) => {
      const r = await ingestRow(tx, i);
      if (r) await applyPlanOn(tx, plan);
      return r;
    };
    return c === q ? begin(run) : run(c);
  };

  /**
   * One claim on `c`. Inside a transaction a lost race would abort it, so the claim runs under a
   * savepoint there; in autocommit it is simply tried again.
   */
  const claimOn = async (c: Queryable, workerId: string, now: Date, inTx: boolean): Promise<ClaimedRun | null> => {
    for (let attempt = 0; ; attempt++) {
      const token = randomUUID();
      try {
        if (inTx) await c.query("SAVEPOINT claim");
        const row = (await query<ClaimRaw>(c, Q.CLAIM, [workerId, now.toISOString(), token])).rows[0];
        if (inTx) await c.query("RELEASE SAVEPOINT claim");
        return row ? toClaimedRun(row, token) : null;
      } catch (err) {
        if (inTx) await c.query("ROLLBACK TO SAVEPOINT claim");
        if (!lostRace(err) || attempt >= 4) throw err;
      }
    }
  };

  // The alerts the settle means (lib/alerts/policy) are recorded on the same client, so
  // `c` must be a transaction's (`finish` opens one).
  const finishOn = async (c: Queryable, run: ClaimedRun, status: FinalStatus, steps: Step[] | null, error: string | null, now: Date) => {
    const at = now.toISOString();
    const r = await query<{ id: string; alert_open: number }>(c, Q.FINISH_AND_COUNT, [run.id, run.claimToken, status, steps === null ? null : JSON.stringify(steps), error, at]);
    const bumped = r.rows[0];
    if (r.rowCount !== 1 || !bumped) return false;
    if (settleNeedsAlertState(status, bumped.alert_open === 1)) await recordSettled(c, run.appletId, { id: run.id, status, error, attempt: run.attempt }, at);
    return true;
  };

  // A checked-out client is inside a transaction (Store#transaction); the pool is autocommit.
  const inTx = "release" in q;

  /**
   * A batch with timed plans: one transaction, row by row (a plan is several statements); a row
   * whose applet is gone makes the batch redo row by row, each in its own transaction, so it fails alone.
   */
  const ingestPlanned = async (items: IngestInput[]): Promise<(Ingested | Error)[]> => {
    try {
      return await begin(async (c) => {
        const out: Ingested[] = [];
        for (const i of items) out.push(await ingestOne(c, i));
        return out;
      });
    } catch (err) {
      if (sqlState(err) !== "23503" && sqlState(err) !== "23505") throw err;
      const out: (Ingested | Error)[] = [];
      for (const i of items) {
        try {
          out.push(await begin((c) => ingestOne(c, i)));
        } catch (e) {
          out.push(e instanceof Error ? e : new Error(String(e)));
        }
      }
      return out;
    }
  };

  type Settle = { run: ClaimedRun; status: FinalStatus; steps: Step[] | null; error: string | null; now: Date; workerId: string };
  type Settled = { ok: boolean; next: ClaimedRun | null };
  const settleInTx = (s: Settle): Promise<Settled> =>
    begin(async (c) => {
      const ok = await finishOn(c, s.run, s.status, s.steps, s.error, s.now);
      return { ok, next: await claimOn(c, s.workerId, s.now, true) };
    });
  /** One run's finish and the next claim in one statement (Q.FINISH_AND_CLAIM); a success that owes alert state, a lost claim or a race lost three times take the transaction. */
  const settleAlone = async (s: Settle): Promise<Settled> => {
    const params = [s.run.id, s.run.claimToken, s.status, s.steps === null ? null : JSON.stringify(s.steps), s.error, s.now.toISOString(), s.workerId];
    const done = await unlessRaced(async () => {
      const token = randomUUID();
      return { token, row: (await query<ClaimRaw & { finished: number }>(q, Q.FINISH_AND_CLAIM, [...params, token])).rows[0] };
    });
    if (done?.row?.finished === 1) return { ok: true, next: done.row.id === null ? null : toClaimedRun(done.row, done.token) };
    return settleInTx(s);
  };
  /**
   * Several of one worker's settles in one statement (Q.FINISH_MANY_AND_CLAIM), the claims handed
   * to the runs whose finish went in, in order; a run whose finish did not go in (its claim lost,
   * alert state owed) is settled alone, as it would have been without the others.
   */
  const settleMany = async (items: Settle[]): Promise<Settled[]> => {
    if (items.length === 1) return [await settleAlone(items[0]!)];
    const claimAt = new Date(Math.max(...items.map((i) => i.now.getTime()))).toISOString();
    const params = [
      items.map((i) => i.run.id),
      items.map((i) => i.run.claimToken),
      items.map((i) => i.status),
      items.map((i) => (i.steps === null ? null : JSON.stringify(i.steps))),
      items.map((i) => i.error),
      items.map((i) => i.now.toISOString()),
      claimAt,
      items[0]!.workerId,
    ];
    const rows = (await unlessRaced(async () => (await query<ClaimRaw & { finished: string[] | null }>(q, Q.FINISH_MANY_AND_CLAIM, params)).rows)) ?? [];
    const finished = new Set(rows[0]?.finished ?? []);
    const claimed = rows.filter((r) => r.id !== null).map((r) => toClaimedRun(r, r.claim_token!));
    const out: Settled[] = [];
    for (const i of items) out.push(finished.has(i.run.id) ? { ok: true, next: claimed.shift() ?? null } : await settleAlone(i));
    return out;
  };
  const settles = createLanes(settleMany);

  return {
    ingest: (i) => ingestOne(q, i),

    ingestSkipped: (i, reason) => begin(async (c) => {
      const eventId = i.eventId ?? newId();
      const runId = newId();
      const r = await query(
        c,
        `WITH e AS (
           INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5::json, $6, $6, $6) ON CONFLICT DO NOTHING RETURNING id
         )
         INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, error, finished_at, created_at, updated_at, applet_version)
         SELECT $7, $2, e.id, 'skipped', 1, $8, NULL, '[]', $9, $6, $6, $6, (SELECT MAX(v.version) FROM applet_versions v WHERE v.applet_id = $2) FROM e
         RETURNING id`,
        [eventId, i.appletId, i.source, i.dedupeKey, i.payloadJson, i.receivedAt, runId, i.maxAttempts, reason],
      );
      if (r.rowCount === 1 && i.plan) await applyPlanOn(c, i.plan);
      return r.rowCount === 1 ? { eventId, runId } : null;
    }),

    activeOf: async (appletId) => {
      const r = (
        await query<{ queued: string; running: string }>(
          q,
          "SELECT COUNT(*) FILTER (WHERE status = 'queued') AS queued, COUNT(*) FILTER (WHERE status = 'running') AS running FROM runs WHERE applet_id = $1 AND status IN ('queued', 'running')",
          [appletId],
        )
      ).rows[0];
      return { queued: Number(r?.queued ?? 0), running: Number(r?.running ?? 0) };
    },

    firstOfDedupeKey: async (appletId, dedupeKey) => {
      const row = (
        await query<{ event_id: string; run_id: string | null }>(
          q,
          `SELECT e.id AS event_id, (SELECT r.id FROM runs r WHERE r.event_id = e.id ORDER BY r.created_at, r.id LIMIT 1) AS run_id
           FROM events e WHERE e.applet_id = $1 AND e.dedupe_key = $2`,
          [appletId, dedupeKey],
        )
      ).rows[0];
      return row ? { eventId: row.event_id, runId: row.run_id } : null;
    },

    statuses: async (ids) =>
      new Map((await query<{ id: string; status: RunStatus }>(q, "SELECT id, status FROM runs WHERE id = ANY($1::text[])", [ids])).rows.map((r) => [r.id, r.status])),

    ingestMany: async (items) => {
      if (items.length === 0) return [];
      if (items.some((i) => i.plan || i.controls)) return ingestPlanned(items);
      const ids = items.map((i) => ({ eventId: i.eventId ?? newId(), runId: newId() }));
      // Group commit: the whole batch in one statement. A row can only fail when its applet was
      // deleted a moment ago; then the batch is redone row by row so that row fails alone.
      try {
        const r = await query<{ event_id: string }>(q, Q.INGEST_MANY, [
          ids.map((x) => x.eventId),
          items.map((i) => i.appletId),
          items.map((i) => i.source),
          items.map((i) => i.dedupeKey),
          items.map((i) => i.payloadJson),
          items.map((i) => i.receivedAt),
          ids.map((x) => x.runId),
          items.map((i) => i.maxAttempts),
        ]);
        const inserted = new Set(r.rows.map((row) => row.event_id));
        return ids.map((x) => (inserted.has(x.eventId) ? x : null));
      } catch (err) {
        if (sqlState(err) !== "23503" && sqlState(err) !== "23505") throw err;
        const out: (Ingested | Error)[] = [];
        for (const i of items) {
          try {
            out.push(await begin((c) => ingestOne(c, i)));
          } catch (e) {
            out.push(e instanceof Error ? e : new Error(String(e)));
          }
        }
        return out;
      }
    },

    claim: (workerId, now) => claimOn(q, workerId, now, inTx),


    saveSteps: async (run, steps, now) => (await query(q, Q.SAVE_STEPS, [run.id, run.claimToken, JSON.stringify(steps), now.toISOString()])).rowCount === 1,

    finish: (run, status, steps, error, now) => begin((c) => finishOn(c, run, status, steps, error, now)),

    finishAndClaim: (run, status, steps, error, now, workerId) => {
      const settle = { run, status, steps, error, now, workerId };
      // The common case goes in one statement, with the other slots' of this worker when they come
      // together (settles.ts); a failure or a settle inside a unit of work takes the transaction.
      return !inTx && (status === "succeeded" || status === "skipped") ? settles.push(workerId, settle) : settleInTx(settle);
    },

    // After the first attempt the requeue and the alert it may mean (Settings: alert on the first
    // failed attempt) go in one transaction; later attempts take the one statement.
    retryLater: async (run, steps, error, nextAttemptAt, now) => {
      const requeue = async (c: Queryable) =>
        (await query(c, Q.REQUEUE, [run.id, run.claimToken, nextAttemptAt.toISOString(), JSON.stringify(steps), error, now.toISOString()])).rowCount === 1;
      if (run.attempt !== 1) return requeue(q);
      const withAlert = async (c: Queryable) => {
        const ok = await requeue(c);
        if (ok) await recordRetrying(c, run.appletId, { id: run.id, error, attempt: run.attempt, maxAttempts: run.maxAttempts, nextAttemptAt: nextAttemptAt.toISOString() }, now.toISOString());
        return ok;
      };
      return inTx ? withAlert(q) : begin(withAlert);
    },

    release: async (run, now) => (await query(q, Q.RELEASE, [run.id, run.claimToken, now.toISOString()])).rowCount === 1,

    recoverStale: async ({ now, stuckBefore, self, gone = [], holding }) => {
      const at = now.toISOString();
      const found = (
        await query<{ id: string; applet_id: string; claim_token: string | null; locked_by: string | null; reason: RecoveredRun["reason"] }>(q, Q.STALE, [
          at,
          stuckBefore.toISOString(),
          self ?? null,
          gone,
          holding ? holding.lockedBefore.toISOString() : null,
          holding?.ids ?? [],
        ])
      ).rows;
      if (found.length === 0) return [];
      const recovered: RecoveredRun[] = [];
      for (const r of found) {
        if ((await query(q, Q.RECOVER, [r.id, r.claim_token, at])).rowCount === 1) {
          recovered.push({ id: r.id, appletId: r.applet_id, lockedBy: r.locked_by, reason: r.reason });
        }
      }
      return recovered;
    },

    get: async (id) => {
      const r = (await query<RunRaw>(q, `SELECT ${Q.RUN_COLUMNS} FROM runs WHERE id = $1`, [id])).rows[0];
      return r ? toRun(r) : null;
    },

    event: async (eventId) => {
      const e = (
        await query<{ id: string; applet_id: string; source: string; dedupe_key: string | null; payload: Record<string, unknown>; received_at: string }>(
          q,
          "SELECT id, applet_id, source, dedupe_key, payload, received_at FROM events WHERE id = $1",
          [eventId],
        )
      ).rows[0];
      return e ? { id: e.id, appletId: e.applet_id, source: e.source, dedupeKey: e.dedupe_key, payload: e.payload, receivedAt: e.received_at } : null;
    },

    recentEvents: async (appletId, limit) =>
      (
        await query<{ id: string; source: string; payload: Record<string, unknown>; received_at: string }>(
          q,
          "SELECT id, source, payload, received_at FROM events WHERE applet_id = $1 ORDER BY received_at DESC, id DESC LIMIT $2",
          [appletId, limit],
        )
      ).rows.map((e) => ({ id: e.id, source: e.source, receivedAt: e.received_at, payload: e.payload })),

    retry: async (id, now, opts = {}) =>
      (
        await query(
          q,
          `UPDATE runs SET status = 'queued', attempt = attempt + 1, max_attempts = GREATEST(max_attempts, attempt + 1),
                  next_attempt_at = COALESCE($3::text, $2), steps = COALESCE($4::json, steps), finished_at = NULL, updated_at = $2
           WHERE id = $1 AND status IN ('failed', 'dead') AND ($5::int IS NULL OR attempt = $5::int)`,
          [id, now.toISOString(), opts.at?.toISOString() ?? null, opts.steps ? JSON.stringify(opts.steps) : null, opts.attempt ?? null],
        )
      ).rowCount === 1,

    replay: async (id, now, opts = {}) => {
      const runId = newId();
      const r = await query(
        q,
        `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at, lane)
         SELECT $1, applet_id, event_id, 'queued', 1, max_attempts, $2, '[]', $2, $2, COALESCE($4::text, lane) FROM runs WHERE id = $3`,
        [runId, now.toISOString(), id, opts.lane ?? null],
      );
      // A timed run's replay runs its one action again (with its own idempotency key, lib/executor).
      if (r.rowCount === 1) await query(q, "UPDATE runs SET planned_run_id = o.planned_run_id, action_index = o.action_index FROM runs o WHERE runs.id = $1 AND o.id = $2", [runId, id]);
      return r.rowCount === 1 ? runId : null;
    },

    list: async (f: RunListFilter): Promise<RunPage> => {
      const limit = Math.min(Math.max(f.limit ?? 50, 1), 200);
      const where: string[] = [];
      const args: unknown[] = [];
      const add = (clause: (n: number) => string, value: unknown) => {
        args.push(value);
        where.push(clause(args.length));
      };
      if (f.appletId) add((n) => `r.applet_id = $${n}`, f.appletId);
      // `retrying` is a queued run after a failed attempt, and `queued` the ones not yet tried (lib/ui/run-status).
      if (f.status === "retrying") where.push("r.status = 'queued' AND r.attempt > 1");
      else if (f.status === "queued") where.push("r.status = 'queued' AND r.attempt = 1");
      else if (f.status) add((n) => `r.status = $${n}`, f.status);
      if (f.reason) add((n) => `r.reason = $${n}`, f.reason);
      if (f.from) add((n) => `r.created_at >= $${n}`, f.from);
      if (f.to) add((n) => `r.created_at <= $${n}`, f.to);
      if (f.cursor) {
        const [createdAt, id] = decodeCursor(f.cursor);
        args.push(createdAt, id);
        where.push(`(r.created_at < $${args.length - 1} OR (r.created_at = $${args.length - 1} AND r.id < $${args.length}))`);
      }
      const whereSql = (w: string[]) => (w.length ? "WHERE " + w.join(" AND ") : "");
      const order = "ORDER BY r.created_at DESC, r.id DESC";
      const searching = Boolean(f.errorText || f.payloadText);
      const scan = Math.min(Math.max(Math.trunc(f.searchScan ?? RUN_SEARCH_SCAN), 1), RUN_SEARCH_SCAN);
      // A search looks at the newest RUN_SEARCH_SCAN runs the other filters select, no further
      // (as on SQLite): the boundary is the last of them, and matches are looked for above it.
      // The last run inside the bound, and the one after it: none after it, and no bound is needed.
      const edge = searching ? (await queryDynamic<{ created_at: string; id: string }>(q, `SELECT r.created_at, r.id FROM runs r ${whereSql(where)} ${order} LIMIT 2 OFFSET ${scan - 1}`, args)).rows : [];
      const boundary = edge.length === 2 ? edge[0] : undefined;
      const searchWhere = [...where];
      const searchArgs = [...args];
      const push = (clause: (n: number) => string, value: unknown) => {
        searchArgs.push(value);
        searchWhere.push(clause(searchArgs.length));
      };
      if (boundary) {
        searchArgs.push(boundary.created_at, boundary.id);
        searchWhere.push(`(r.created_at > $${searchArgs.length - 1} OR (r.created_at = $${searchArgs.length - 1} AND r.id >= $${searchArgs.length}))`);
      }
      if (f.errorText) push((n) => `r.error IS NOT NULL AND strpos(lower(r.error), lower($${n})) > 0`, f.errorText);
      const join = f.payloadText ? "JOIN events e ON e.id = r.event_id" : "";
      if (f.payloadText) push((n) => `strpos(lower(left(e.payload::text, ${RUN_SEARCH_PAYLOAD_BYTES})), lower($${n})) > 0`, f.payloadText);
      const runColumns = Q.RUN_COLUMNS.split(", ").map((c) => `r.${c}`).join(", ");
      const sql = `SELECT ${runColumns} FROM runs r ${join} ${whereSql(searchWhere)} ${order} LIMIT ${limit + 1}`;
      const rows = (await queryDynamic<RunRaw>(q, sql, searchArgs)).rows;
      const page = rows.slice(0, limit).map(toRun);
      const last = page[page.length - 1];
      if (rows.length > limit && last) return { runs: page, nextCursor: encodeCursor(last.createdAt, last.id) };
      return boundary ? { runs: page, nextCursor: encodeCursor(boundary.created_at, boundary.id), searchStoppedAt: boundary.created_at } : { runs: page, nextCursor: null };
    },

    ofEvent: async (eventId, limit) =>
      (await query<{ id: string; status: RunStatus; created_at: string }>(q, "SELECT id, status, created_at FROM runs WHERE event_id = $1 ORDER BY created_at, id LIMIT $2", [eventId, limit])).rows.map(
        (r): EventRun => ({ id: r.id, status: r.status, createdAt: r.created_at }),
      ),

    changedAfter: async (at, id, limit = 500) =>
      (
        await query<RunChange>(
          q,
          `SELECT id, applet_id, status, updated_at FROM runs
           WHERE updated_at >= $1 AND (updated_at > $1 OR id > $2)
           ORDER BY updated_at, id LIMIT $3`,
          [at, id, limit],
        )
      ).rows,

    statsByApplet: async (since) =>
      (
        await query<{ applet_id: string; runs_24h: number; failed_24h: number; last_status: string | null; last_at: string | null }>(
          q,
          `SELECT a.id AS applet_id,
                  (SELECT COUNT(*)::int FROM runs r WHERE r.applet_id = a.id AND r.created_at >= $1) AS runs_24h,
                  (SELECT COUNT(*)::int FROM runs r WHERE r.applet_id = a.id AND r.created_at >= $1 AND r.status IN ('failed', 'dead')) AS failed_24h,
                  CASE WHEN l.status = 'queued' AND l.attempt > 1 THEN 'retrying' ELSE l.status END AS last_status, l.created_at AS last_at
           FROM applets a
           LEFT JOIN LATERAL (SELECT status, attempt, created_at FROM runs r WHERE r.applet_id = a.id ORDER BY r.created_at DESC LIMIT 1) l ON true`,
          [since],
        )
      ).rows,

    tally: async (since, now) => {
      const byApplet = (
        await query<{ applet_id: string; status: string; n: number }>(
          q,
          `SELECT applet_id, status, COUNT(*)::int AS n FROM runs WHERE created_at >= $1 AND status NOT IN ('queued', 'running') GROUP BY applet_id, status
           UNION ALL SELECT applet_id, 'queued', COUNT(*)::int FROM runs WHERE status = 'queued' AND applet_id IS NOT NULL GROUP BY applet_id
           UNION ALL SELECT applet_id, 'running', COUNT(*)::int FROM runs WHERE status = 'running' AND applet_id IS NOT NULL GROUP BY applet_id`,
          [since],
        )
      ).rows.map((r) => ({ appletId: r.applet_id, status: r.status, count: r.n }));
      const t = (
        await query<{ queued: number; oldest_due: string | null }>(
          q,
          Q.QUEUE_TALLY,
          [now.toISOString()],
        )
      ).rows[0]!;
      return { byApplet, queued: t.queued, oldestDueAt: t.oldest_due };
    },
  };
}

// ---------------------------------------------------------------------------------------------

function secretsStore(q: Queryable): SecretsStore {
  return {
    list: async () =>
      (await query<{ name: string; created_at: string; updated_at: string }>(q, "SELECT name, created_at, updated_at FROM secrets ORDER BY name")).rows.map((r) => ({
        name: r.name,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      })),
    getEncrypted: async (name) => (await query<{ value_encrypted: string }>(q, "SELECT value_encrypted FROM secrets WHERE name = $1", [name])).rows[0]?.value_encrypted ?? null,
    allEncrypted: async () =>
      (await query<{ name: string; value_encrypted: string }>(q, "SELECT name, value_encrypted FROM secrets")).rows.map((r) => ({ name: r.name, valueEncrypted: r.value_encrypted })),
    put: async (id, name, encrypted, now) => {
      await query(
        q,
        `INSERT INTO secrets (id, name, value_encrypted, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (name) DO UPDATE SET value_encrypted = excluded.value_encrypted, updated_at = excluded.updated_at`,
        [id, name, encrypted, now],
      );
    },
    delete: async (name) => ((await query(q, "DELETE FROM secrets WHERE name = $1", [name])).rowCount ?? 0) > 0,
  };
}

function apiTokensStore(q: Queryable): ApiTokensStore {
  type Raw = { id: string; name: string; prefix: string; read_only: number; last_used_at: string | null; expires_at: string | null; created_at: string };
  const toRow = (r: Raw): ApiTokenRow => ({ id: r.id, name: r.name, prefix: r.prefix, readOnly: r.read_only === 1, lastUsedAt: r.last_used_at, expiresAt: r.expires_at, createdAt: r.created_at });
  const columns = "id, name, prefix, read_only, last_used_at, expires_at, created_at";
  return {
    list: async () => (await query<Raw>(q, `SELECT ${columns} FROM api_tokens ORDER BY created_at, id`)).rows.map(toRow),
    byHash: async (hash) => {
      const r = (await query<Raw>(q, `SELECT ${columns} FROM api_tokens WHERE token_hash = $1`, [hash])).rows[0];
      return r ? toRow(r) : null;
    },
    nameTaken: async (name) => (await query(q, "SELECT 1 FROM api_tokens WHERE name = $1", [name])).rows.length > 0,
    insert: async (t) => {
      await query(q, "INSERT INTO api_tokens (id, name, token_hash, prefix, read_only, expires_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)", [t.id, t.name, t.hash, t.prefix, t.readOnly ? 1 : 0, t.expiresAt, t.now]);
    },
    touch: async (id, now) => {
      await query(q, "UPDATE api_tokens SET last_used_at = $1 WHERE id = $2", [now, id]);
    },
    delete: async (id) => ((await query(q, "DELETE FROM api_tokens WHERE id = $1", [id])).rowCount ?? 0) > 0,
  };
}

interface UserRaw {
  id: string;
  email: string;
  password_hash: string;
  session_version: number;
  created_at: string;
  updated_at: string;
}

const toUser = (r: UserRaw): User => ({
  id: r.id,
  email: r.email,
  passwordHash: r.password_hash,
  sessionVersion: r.session_version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The advisory lock first-run setup takes so two setups (any processes) create one user. */
const SETUP_LOCK_KEY = 7_216_016_002;

function usersStore(q: Queryable, begin: <T>(fn: (client: Queryable) => Promise<T>) => Promise<T>): UsersStore {
  const one = async (text: string, args: unknown[]) => {
    const r = (await query<UserRaw>(q, text, args)).rows[0];
    return r ? toUser(r) : null;
  };
  const insertOn = async (c: Queryable, u: { id: string; email: string; passwordHash: string; now: string }) => {
    await query(c, "INSERT INTO users (id, email, password_hash, session_version, created_at, updated_at) VALUES ($1, $2, $3, 1, $4, $4)", [u.id, u.email, u.passwordHash, u.now]);
  };
  return {
    count: async () => (await query<{ n: number }>(q, "SELECT COUNT(*)::int AS n FROM users")).rows[0]!.n,
    byEmail: (email) => one("SELECT * FROM users WHERE email = $1", [email]),
    byId: (id) => one("SELECT * FROM users WHERE id = $1", [id]),
    first: () => one("SELECT * FROM users ORDER BY created_at LIMIT 1", []),
    insert: (u) => insertOn(q, u),
    // READ COMMITTED lets two transactions both count zero; a transaction-scoped advisory lock
    // serialises them, and the second counts after the first committed.
    insertIfNone: (u) =>
      begin(async (c) => {
        await query(c, "SELECT pg_advisory_xact_lock($1)", [SETUP_LOCK_KEY]);
        if ((await query<{ n: number }>(c, "SELECT COUNT(*)::int AS n FROM users")).rows[0]!.n > 0) return false;
        await insertOn(c, u);
        return true;
      }),
    bumpSessionVersion: async (id, now) =>
      (await query<{ session_version: number }>(q, "UPDATE users SET session_version = session_version + 1, updated_at = $1 WHERE id = $2 RETURNING session_version", [now, id])).rows[0]
        ?.session_version ?? null,
    setPassword: async (id, passwordHash, now) =>
      (
        await query<{ session_version: number }>(
          q,
          "UPDATE users SET password_hash = $1, session_version = session_version + 1, updated_at = $2 WHERE id = $3 RETURNING session_version",
          [passwordHash, now, id],
        )
      ).rows[0]?.session_version ?? null,
  };
}

function jobLocksStore(q: Queryable): JobLocksStore {
  return {
    take: async (name, holder, now, ttlMs) =>
      (
        // An upsert: a lock per applet (a held connection, lib/listeners) has no row until its first take.
        await query(
          q,
          `INSERT INTO job_locks (name, locked_by, locked_at, expires_at) VALUES ($4, $1, $2, $3)
           ON CONFLICT (name) DO UPDATE SET locked_by = excluded.locked_by, locked_at = excluded.locked_at, expires_at = excluded.expires_at
           WHERE job_locks.locked_by IS NULL OR job_locks.expires_at < $2`,
          [holder, now.toISOString(), new Date(now.getTime() + ttlMs).toISOString(), name],
        )
      ).rowCount === 1,
    renew: async (name, holder, now, ttlMs) =>
      (await query(q, "UPDATE job_locks SET expires_at = $1 WHERE name = $2 AND locked_by = $3", [new Date(now.getTime() + ttlMs).toISOString(), name, holder])).rowCount === 1,
    release: async (name, holder, now) =>
      (await query(q, "UPDATE job_locks SET locked_by = NULL, locked_at = NULL, expires_at = NULL, last_run_at = $1 WHERE name = $2 AND locked_by = $3", [now.toISOString(), name, holder]))
        .rowCount === 1,
    heartbeat: async (name, now) => {
      await query(q, "UPDATE job_locks SET last_run_at = $1 WHERE name = $2", [now.toISOString(), name]);
    },
    get: async (name) => {
      const r = (
        await query<{ name: string; locked_by: string | null; locked_at: string | null; expires_at: string | null; last_run_at: string | null }>(q, "SELECT * FROM job_locks WHERE name = $1", [
          name,
        ])
      ).rows[0];
      return r ? { name: r.name, lockedBy: r.locked_by, lockedAt: r.locked_at, expiresAt: r.expires_at, lastRunAt: r.last_run_at } : null;
    },
  };
}

function workersStore(q: Queryable, begin: <T>(fn: (client: Queryable) => Promise<T>) => Promise<T>): WorkersStore {
  return {
    heartbeat: (h: Heartbeat) =>
      begin(async (c) => {
        const now = h.now.toISOString();
        await query(
          c,
          `INSERT INTO workers (id, hostname, pid, seen_at, lease_until, fault, smtp_port, metrics, process_scope, session_lock, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $4, $4)
           ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, lease_until = excluded.lease_until,
             fault = excluded.fault, smtp_port = excluded.smtp_port, metrics = excluded.metrics,
             process_scope = excluded.process_scope, session_lock = excluded.session_lock, updated_at = excluded.updated_at`,
          [h.id, h.hostname, h.pid, now, new Date(h.now.getTime() + h.leaseMs).toISOString(), h.fault, h.smtpPort ?? null, h.metrics ?? null, h.processScope ?? null, h.sessionLock ?? null],
        );
        await query(c, "UPDATE job_locks SET last_run_at = $1 WHERE name = 'worker_heartbeat'", [now]);
      }),
    remove: async (id) => (await query(q, "DELETE FROM workers WHERE id = $1", [id])).rowCount === 1,
    live: async (now) =>
      (
        await query<{
          id: string;
          hostname: string;
          pid: number;
          seen_at: string;
          lease_until: string;
          fault: string | null;
          smtp_port: number | null;
          metrics: string | null;
          process_scope: string | null;
          session_lock: number | null;
          created_at: string;
        }>(q, "SELECT * FROM workers WHERE lease_until > $1 ORDER BY created_at, id", [now.toISOString()])
      ).rows.map((r) => ({
        id: r.id,
        hostname: r.hostname,
        pid: r.pid,
        seenAt: r.seen_at,
        leaseUntil: r.lease_until,
        fault: r.fault,
        smtpPort: r.smtp_port,
        metrics: r.metrics,
        processScope: r.process_scope,
        sessionLock: r.session_lock,
        createdAt: r.created_at,
      })),
    prune: async (before) =>
      (
        await query(
          q,
          Q.PRUNE_WORKERS,
          [before.toISOString()],
        )
      ).rowCount ?? 0,
  };
}

function seedStore(q: Queryable): SeedStore {
  return {
    setRunState: async (runId, s) =>
      (
        await query(
          q,
          `UPDATE runs SET status = $2, attempt = $3, max_attempts = $4, next_attempt_at = $5, locked_by = $6, locked_at = $7, claim_token = $8,
                  started_at = $9, finished_at = $10, error = $11, steps = $12::json, updated_at = $13
           WHERE id = $1`,
          [runId, s.status, s.attempt, s.maxAttempts, s.nextAttemptAt, s.lockedBy, s.lockedAt, s.claimToken, s.startedAt, s.finishedAt, s.error, JSON.stringify(s.steps), s.updatedAt],
        )
      ).rowCount === 1,
    recountApplet: async (appletId) => {
      await query(
        q,
        `UPDATE applets SET
           run_count = (SELECT COUNT(*)::int FROM runs r WHERE r.applet_id = applets.id AND r.status IN ('succeeded', 'failed', 'skipped', 'dead')),
           last_fired_at = (SELECT MAX(r.finished_at) FROM runs r WHERE r.applet_id = applets.id)
         WHERE id = $1`,
        [appletId],
      );
    },
  };
}

/** Retention on PostgreSQL: batched deletes; autovacuum hands the space back ("engine"). */
function maintenanceStore(q: Queryable): MaintenanceStore {
  /** Rows of `runs` updated (not in place) or deleted, as the statistics counted them at this process's last vacuum. */
  let changesAtVacuum: number | null = null;
  return {
    deleteRunsBefore: async (before, limit) =>
      (
        await query(
          q,
          `DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE created_at < $1 AND status NOT IN ('queued', 'running', 'planned') LIMIT $2)`,
          [before, limit],
        )
      ).rowCount ?? 0,
    deleteEventsBefore: async (before, limit) =>
      (
        await query<{ id: string }>(
          q,
          `DELETE FROM events WHERE id IN (
             SELECT e.id FROM events e WHERE e.received_at < $1 AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.event_id = e.id) LIMIT $2)
           RETURNING id`,
          [before, limit],
        )
      ).rows.map((r) => r.id),
    spaceMode: async () => "engine",
    size: async () => {
      const r = (await query<{ bytes: string }>(q, "SELECT pg_database_size(current_database())::text AS bytes")).rows[0];
      return { bytes: Number(r?.bytes ?? 0), freeBytes: 0, pageSize: 8192 };
    },
    convertToIncremental: async () => undefined,
    reclaimStep: async () => undefined,
    vacuumQueue: async ({ minChanges }) => {
      const changes = Number((await query<{ n: string | null }>(q, Q.RUNS_CHANGES)).rows[0]?.n ?? 0);
      // The counters restart with the statistics (a reset, a crash): a smaller number is a change too.
      if (changesAtVacuum !== null && changes >= changesAtVacuum && changes - changesAtVacuum < minChanges) return { vacuumed: false, ms: 0 };
      const started = performance.now();
      await queryDynamic(q, Q.VACUUM_QUEUE);
      changesAtVacuum = changes;
      return { vacuumed: true, ms: performance.now() - started };
    },
  };
}

export type { InstanceKeys } from "./instance";
