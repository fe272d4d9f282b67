import path from "node:path";
import type { Clock } from "../../../core/clock";
import type { Logger } from "../../../core/log";
import type {
  AlertPolicy,
  AlertsStore,
  ApiTokensStore,
  AppletsStore,
  EventFilesStore,
  FiresStore,
  RunControlsStore,
  JobLocksStore,
  MaintenanceStore,
  PlannedRunsStore,
  RunsStore,
  SecretsStore,
  SeedStore,
  Store,
  StoreAggregates,
  TriggerStateStore,
  UsersStore,
  WaitsStore,
  WorkersStore,
} from "../types";
import { createAlertsRepo } from "./alerts";
import { createApiTokensRepo } from "./api-tokens";
import { createAppletsRepo } from "./applets";
import { startWalCheckpointer } from "./checkpoint";
import { openDatabase, type DbHandle, type Sqlite } from "./client";
import { createEventFilesRepo } from "./event-files";
import { createFiresRepo } from "./fires";
import { asError, ConnectionGate } from "./gate";
import { createHookCache, type HookCache } from "./hook-cache";
import { startIngestThread, threadable } from "./ingest-thread";
import { createJobLocksRepo } from "./job-locks";
import { createMaintenanceRepo } from "./maintenance";
import { createPlannedRunsRepo } from "./planned-runs";
import { createRunsRepo } from "./runs";
import { createSecretsRepo } from "./secrets";
import { createSeedRepo } from "./seed";
import { createTriggerStateRepo } from "./trigger-state";
import { createUsersRepo } from "./users";
import { createWaitsRepo } from "./waits";
import { createWorkersRepo } from "./workers";
import { createRunControlsRepo } from "./run-controls";

/** A synchronous repo seen through the seam: every method returns a promise of what it returned. */
type Async<T> = { [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never };

/** The synchronous repos over one connection (today's prepared statements, unchanged). */
function createRepos(sqlite: Sqlite, alertPolicy: AlertPolicy) {
  const planned = createPlannedRunsRepo(sqlite);
  const alerts = createAlertsRepo(sqlite, alertPolicy);
  const runControls = createRunControlsRepo(sqlite, planned.applyPlan);
  return {
    runControls,
    alerts: alerts.store,
    applets: createAppletsRepo(sqlite),
    triggerState: createTriggerStateRepo(sqlite, alerts),
    runs: createRunsRepo(sqlite, alerts, planned.applyPlan, runControls.ingest),
    plannedRuns: planned.repo,
    secrets: createSecretsRepo(sqlite),
    users: createUsersRepo(sqlite),
    jobLocks: createJobLocksRepo(sqlite),
    workers: createWorkersRepo(sqlite),
    seed: createSeedRepo(sqlite),
    maintenance: createMaintenanceRepo(sqlite),
    apiTokens: createApiTokensRepo(sqlite),
    eventFiles: createEventFilesRepo(sqlite),
    fires: createFiresRepo(sqlite),
    waits: createWaitsRepo(sqlite),
  };
}
type Repos = ReturnType<typeof createRepos>;

function wrap<T extends object>(repo: T, call: <R>(fn: () => R) => Promise<R>): Async<T> {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(repo)) {
    if (typeof fn === "function") out[name] = (...args: unknown[]) => call(() => (fn as (...a: unknown[]) => unknown)(...args));
  }
  return out as Async<T>;
}

/** The repo with `after` called once each of its methods returned or threw. */
function afterEach<T extends object>(repo: T, after: () => void): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(repo)) {
    out[name] =
      typeof fn === "function"
        ? (...args: unknown[]) => {
            try {
              return (fn as (...a: unknown[]) => unknown)(...args);
            } finally {
              after();
            }
          }
        : fn;
  }
  return out as T;
}

// The compiler checks here that each wrapped repo is the interface w16b implements for PostgreSQL.
function aggregates(repos: Repos, call: <R>(fn: () => R) => Promise<R>): StoreAggregates & { maintenance: MaintenanceStore } {
  const applets: AppletsStore = wrap(repos.applets, call);
  const triggerState: TriggerStateStore = wrap(repos.triggerState, call);
  const runs: RunsStore = wrap(repos.runs, call);
  const plannedRuns: PlannedRunsStore = wrap(repos.plannedRuns, call);
  const secrets: SecretsStore = wrap(repos.secrets, call);
  const users: UsersStore = wrap(repos.users, call);
  const jobLocks: JobLocksStore = wrap(repos.jobLocks, call);
  const workers: WorkersStore = wrap(repos.workers, call);
  const seed: SeedStore = wrap(repos.seed, call);
  const maintenance: MaintenanceStore = wrap(repos.maintenance, call);
  const apiTokens: ApiTokensStore = wrap(repos.apiTokens, call);
  const eventFiles: EventFilesStore = wrap(repos.eventFiles, call);
  const alerts: AlertsStore = wrap(repos.alerts, call);
  const fires: FiresStore = wrap(repos.fires, call);
  const runControls: RunControlsStore = wrap({ mergedEvents: repos.runControls.mergedEvents, admitStart: repos.runControls.admitStart }, call);
  const waits: WaitsStore = wrap(repos.waits, call);
  return { applets, triggerState, runs, plannedRuns, secrets, users, jobLocks, workers, seed, maintenance, apiTokens, eventFiles, alerts, fires, runControls, waits };
}

/**
 * One gate per database file in this process, shared by every store opened on it. A second
 * connection to the same file (tests do this to play two workers) must not start a statement
 * while a unit of work of the first is open: better-sqlite3 waits for the lock synchronously
 * (busy_timeout), blocking the very event loop the open transaction needs to finish, so both would
 * stall for the whole timeout. Waiting at the gate instead is asynchronous. Other processes wait
 * in SQLite as before (their open transactions never wait on ours).
 */
const gates = new Map<string, { gate: ConnectionGate; users: number; hookCaches: Set<HookCache> }>();
function gateFor(file: string) {
  const key = path.resolve(file);
  let entry = gates.get(key);
  if (!entry) gates.set(key, (entry = { gate: new ConnectionGate(), users: 0, hookCaches: new Set() }));
  entry.users++;
  return entry;
}
function dropGate(file: string): void {
  const key = path.resolve(file);
  const entry = gates.get(key);
  if (entry && --entry.users <= 0) gates.delete(key);
}

export interface SqliteStoreOptions {
  /** The database file (created with its folder, migrations applied). */
  file: string;
  synchronous?: "NORMAL" | "FULL";
  /**
   * The web process leaves WAL checkpoints out of its requests (OpenOptions.walAutocheckpoint)
   * and runs them on a size and time bound in a thread of its own (./checkpoint.ts).
   */
  role?: "web" | "worker";
  migrationsDir?: string;
  log?: Logger;
  clock?: Clock;
  /** What a settle or a stored poll means for alerts, recorded in its transaction (lib/alerts/policy.ts's `alertPolicy`). */
  alertPolicy: AlertPolicy;
}

/** The SQLite store with the handle beneath it, for SQLite-only tools (backup, tests of SQLite itself). */
export interface SqliteStore extends Store {
  readonly engine: "sqlite";
  readonly db: DbHandle;
}

/**
 * SQLite behind the async seam. Store calls are synchronous statements handed back as resolved
 * promises (the hot paths keep their prepared statements and group commit); a unit of work takes
 * the file's gate (./gate.ts), BEGIN IMMEDIATE, runs the callback's calls directly on the
 * connection, and COMMITs, so two async units of work never interleave on the one connection and
 * no outside call slips into an open transaction.
 */
export function openSqliteStore(opts: SqliteStoreOptions): SqliteStore {
  const walAutocheckpoint = opts.role === "web" ? 10_000 : undefined;
  const db = openDatabase(opts.file, { synchronous: opts.synchronous, migrationsDir: opts.migrationsDir, walAutocheckpoint });
  const sqlite = db.sqlite;
  const web = opts.role === "web" && opts.log ? opts.log.child("db") : null;
  const checkpointer = web ? startWalCheckpointer({ file: opts.file, log: web, clock: opts.clock }) : null;
  // The web process's webhooks are inserted in a thread (./ingest-thread.ts); events that plan timed
  // actions, and everything else, on this connection.
  const ingestThread = web ? startIngestThread({ file: opts.file, synchronous: opts.synchronous, walAutocheckpoint: walAutocheckpoint!, log: web }) : null;
  const shared = gateFor(opts.file);
  const gate = shared.gate;
  const repos = createRepos(sqlite, opts.alertPolicy);
  // Webhooks read their applet from a cache (./hook-cache.ts); a write of applets through any store
  // on this file in this process, or a unit of work, makes every cache on it read the counter again.
  const hookChanges = sqlite.prepare<[], number>("SELECT n FROM hook_changes WHERE id = 1").pluck();
  const hookCache = createHookCache(repos.applets.forHook, () => Number(hookChanges.get() ?? 0));
  shared.hookCaches.add(hookCache);
  const appletsChanged = () => {
    for (const c of shared.hookCaches) c.changed();
  };
  repos.applets = { ...afterEach(repos.applets, appletsChanged), forHook: (id) => hookCache.forHook(id) };
  const outer = aggregates(repos, (fn) => gate.run(fn));
  if (ingestThread) {
    const onConnection = outer.runs;
    outer.runs = { ...onConnection, ingestMany: (items) => (ingestThread.alive && threadable(items) ? ingestThread.ingestMany(items) : onConnection.ingestMany(items)) };
  }
  let closed = false;

  async function transaction<T>(fn: (tx: StoreAggregates) => Promise<T>): Promise<T> {
    await gate.acquire();
    let open = true;
    const inTx = <R>(f: () => R): Promise<R> => {
      if (!open) return Promise.reject(new Error("store: a call on a transaction's tx after it ended; use the store outside store.transaction"));
      try {
        return Promise.resolve(f());
      } catch (err) {
        return Promise.reject(asError(err));
      }
    };
    try {
      sqlite.exec("BEGIN IMMEDIATE");
      try {
        const { maintenance: _unused, ...tx } = aggregates(repos, inTx);
        const result = await fn(tx);
        // COMMIT can fail (a full disk): it throws here, and the transaction is rolled back below.
        sqlite.exec("COMMIT");
        return result;
      } catch (err) {
        if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
        throw err;
      } finally {
        open = false;
        appletsChanged();
      }
    } finally {
      gate.release();
    }
  }

  return {
    engine: "sqlite",
    db,
    ...outer,
    transaction,
    close() {
      if (closed) return Promise.resolve();
      closed = true;
      const shut = () => {
        void checkpointer?.stop();
        db.close();
        shared.hookCaches.delete(hookCache);
        dropGate(opts.file);
      };
      // The thread's batch in flight is committed (or not) before the file is let go.
      if (ingestThread) return ingestThread.stop().then(() => gate.run(shut));
      // Synchronous when nothing is in flight (App#close stays synchronous for its callers);
      // otherwise after the unit of work that holds the connection.
      if (!gate.held) {
        shut();
        return Promise.resolve();
      }
      return gate.run(shut);
    },
  };
}

/** The better-sqlite3 connection under a SQLite store, for SQLite-only tools (benches, SQLite tests); throws on any other engine. */
export function sqliteOf(store: Store): Sqlite {
  if (store.engine !== "sqlite" || !("db" in store)) throw new Error(`store: this needs the SQLite store; the database is ${store.engine}`);
  return (store as SqliteStore).db.sqlite;
}
