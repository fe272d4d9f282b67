/** The store: every aggregate, the unit of work, and how one is opened. */
import type { AlertsStore } from "./alerts-store";
import type { ApiTokensStore } from "./api-tokens";
import type { AppletsStore } from "./applets";
import type { EventFilesStore } from "./event-files";
import type { FiresStore } from "./fires";
import type { JobLocksStore } from "./job-locks";
import type { MaintenanceStore } from "./maintenance";
import type { PlannedRunsStore } from "./planned-runs";
import type { RunControlsStore } from "./run-controls";
import type { RunsStore } from "./runs-store";
import type { SecretsStore } from "./secrets";
import type { SeedStore } from "./seed";
import type { TriggerStateStore } from "./trigger-state-store";
import type { UsersStore } from "./users";
import type { WaitsStore } from "./waits";
import type { WorkersStore } from "./workers";

/** The aggregates bound to one transaction (or to autocommit, on `Store` itself). */
export interface StoreAggregates {
  applets: AppletsStore;
  triggerState: TriggerStateStore;
  /** The queue: events + runs. */
  runs: RunsStore;
  /** Timed actions' planned runs. */
  plannedRuns: PlannedRunsStore;
  secrets: SecretsStore;
  users: UsersStore;
  jobLocks: JobLocksStore;
  workers: WorkersStore;
  seed: SeedStore;
  apiTokens: ApiTokensStore;
  eventFiles: EventFilesStore;
  alerts: AlertsStore;
  /** The fire ledger and expected activity. */
  fires: FiresStore;
  /** Controls over runs: what a debounced run carries. */
  runControls: RunControlsStore;
  /** Runs parked at a wait step. */
  waits: WaitsStore;
}

/** `Store#transaction`'s argument: the same aggregates, every call part of one transaction. */
export type StoreTx = StoreAggregates;

export interface Store extends StoreAggregates {
  /** Engine name for logs and health (`sqlite` | `postgres`); never branch on it above the stores. */
  readonly engine: string;
  maintenance: MaintenanceStore;
  /**
   * Cross-process wake-ups (PostgreSQL: LISTEN/NOTIFY). Absent where the engine has none (SQLite):
   * callers then keep polling. Each `on…` returns its unsubscribe function. A listener may be
   * called spuriously or late (a poll stays the safety net); it must not throw.
   */
  notifications?: {
    /** A run became claimable (ingest, retry, replay, release, recovery) in any process. */
    onQueued(listener: () => void): () => void;
    /**
     * Runs were inserted or changed status in any process (the SSE stream of every web process).
     * Says only that something changed: what changed is `runs.changedAfter` (one announcement per
     * statement or transaction, however many rows it wrote).
     */
    onRunChanged(listener: () => void): () => void;
    /**
     * This process has a live view open (an SSE stream) for the next `forMs`: run changes are
     * announced (onRunChanged, in every process) only while some process says so, since each
     * announcement wakes every listening session. Renew it well before it runs out.
     */
    watchRuns(watcherId: string, forMs: number): Promise<void>;
    /**
     * This worker has an idle slot for the next `forMs`: runs that become claimable are announced
     * (onQueued, in every process) only while some worker says so, since an announcing commit
     * holds the server's one notification lock through its WAL flush and so serialises every
     * other announcing commit. Resolves once the transactions in progress when the row went in
     * have ended (they may have looked for a row before it was there): a look at the queue after
     * it misses no run. `settle: false`, a renewal of a row that has not lapsed, skips that wait.
     */
    watchQueue(workerId: string, forMs: number, opts?: { settle?: boolean }): Promise<void>;
    /** This worker's slots are all busy again (or it stops): no announcement is needed for it. */
    unwatchQueue(workerId: string): Promise<void>;
  };
  /**
   * Unit of work: runs `fn` with the aggregates bound to one transaction, commits when the
   * promise it returns resolves, rolls back (and rethrows) when it rejects. Resolves after COMMIT.
   *
   * Rules for `fn`:
   * - Use only `tx` inside it, never the outer `store` (on SQLite, whose one connection the
   *   transaction holds, an outer call waits for the transaction that waits for it).
   * - Await only store calls: no network or file I/O while the transaction holds its locks.
   * - Transactions do not nest (`tx` has no `transaction`); a method that is a transaction of its
   *   own (`ingest`, `finish`, `heartbeat`, …) called on `tx` becomes part of the outer one.
   * - Writes inside it are serialised with every other writer (SQLite: BEGIN IMMEDIATE;
   *   PostgreSQL: READ COMMITTED with the row locks the statements take), so a read-then-write in
   *   `fn` sees no concurrent write of the same rows committed in between on SQLite; on PostgreSQL
   *   the conditional UPDATEs above (claims, fenced settles) carry the correctness, not the isolation level.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** Resolves when every call in flight has settled and the connection(s) are closed. */
  close(): Promise<void>;
  /**
   * Where opening needs I/O the synchronous `openStore` cannot do (PostgreSQL: migrations under an
   * advisory lock, the key check), it happens in the background; this resolves when it is done and
   * rejects with the reason the process must not start. Composition roots await it before serving.
   * Absent (SQLite): the store is ready when `openStore` returns.
   */
  ready?(): Promise<void>;
}

/** What a composition root asks for; lib/db/store/index.ts picks the implementation from `url`. */
export interface StoreOptions {
  /** `file:…` or a path (SQLite), `postgres://…` (PostgreSQL). */
  url: string;
  /** Web processes leave WAL checkpoints to a background thread (SQLite only; others ignore it). */
  role?: "web" | "worker";
  sqliteSynchronous?: "NORMAL" | "FULL";
  /** PostgreSQL connection pool size per process. */
  poolSize?: number;
}
