import path from "node:path";
import type { Clock } from "../../../core/clock";
import type { Logger } from "../../../core/log";
import type {
  AlertsStore,
  ApiTokensStore,
  AppletsStore,
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
  WorkersStore,
} from "../types";
import { createAlertsRepo } from "./alerts";
import { createApiTokensRepo } from "./api-tokens";
import { createAppletsRepo } from "./applets";
import { startWalCheckpointer } from "./checkpoint";
import { openDatabase, type DbHandle, type Sqlite } from "./client";
import { asError, ConnectionGate } from "./gate";
import { createJobLocksRepo } from "./job-locks";
import { createMaintenanceRepo } from "./maintenance";
import { createPlannedRunsRepo } from "./planned-runs";
import { createRunsRepo } from "./runs";
import { createSecretsRepo } from "./secrets";
import { createSeedRepo } from "./seed";
import { createTriggerStateRepo } from "./trigger-state";
import { createUsersRepo } from "./users";
import { createWorkersRepo } from "./workers";

/** A synchronous repo seen through the seam: every method returns a promise of what it returned. */
type Async<T> = { [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never };

/** The synchronous repos over one connection (today's prepared statements, unchanged). */
function createRepos(sqlite: Sqlite) {
  const planned = createPlannedRunsRepo(sqlite);
  const alerts = createAlertsRepo(sqlite);
  return {
    alerts: alerts.store,
    applets: createAppletsRepo(sqlite),
    triggerState: createTriggerStateRepo(sqlite, alerts),
    runs: createRunsRepo(sqlite, alerts, planned.applyPlan),
    plannedRuns: planned.repo,
    secrets: createSecretsRepo(sqlite),
    users: createUsersRepo(sqlite),
    jobLocks: createJobLocksRepo(sqlite),
    workers: createWorkersRepo(sqlite),
    seed: createSeedRepo(sqlite),
    maintenance: createMaintenanceRepo(sqlite),
    apiTokens: createApiTokensRepo(sqlite),
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
  const alerts: AlertsStore = wrap(repos.alerts, call);
  return { applets, triggerState, runs, plannedRuns, secrets, users, jobLocks, workers, seed, maintenance, apiTokens, alerts };
}

/**
 * One gate per database file in this process, shared by every store opened on it. A second
 * connection to the same file (tests do this to play two workers) must not start a statement
 * while a unit of work of the first is open: better-sqlite3 waits for the lock synchronously
 * (busy_timeout), blocking the very event loop the open transaction needs to finish, so both would
 * stall for the whole timeout. Waiting at the gate instead is asynchronous. Other processes wait
 * in SQLite as before (their open transactions never wait on ours).
 */
const gates = new Map<string, { gate: ConnectionGate; users: number }>();
function gateFor(file: string): ConnectionGate {
  const key = path.resolve(file);
  let entry = gates.get(key);
  if (!entry) gates.set(key, (entry = { gate: new ConnectionGate(), users: 0 }));
  entry.users++;
  return entry.gate;
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
  const db = openDatabase(opts.file, {
    synchronous: opts.synchronous,
    migrationsDir: opts.migrationsDir,
    walAutocheckpoint: opts.role === "web" ? 10_000 : undefined,
  });
  const sqlite = db.sqlite;
  const checkpointer =
    opts.role === "web" && opts.log ? startWalCheckpointer({ file: opts.file, log: opts.log.child("db"), clock: opts.clock }) : null;
  const gate = gateFor(opts.file);
  const repos = createRepos(sqlite);
  const outer = aggregates(repos, (fn) => gate.run(fn));
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
        dropGate(opts.file);
      };
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
