import { loadConfig, type AppConfig } from "./core/config";
import { systemClock, type Clock } from "./core/clock";
import { createLogger, type Logger } from "./core/log";
import { startWalCheckpointer } from "./db/checkpoint";
import { openDatabase, type DbHandle } from "./db/client";
import { createApiTokensRepo } from "./db/repos/api-tokens";
import { createAppletsRepo } from "./db/repos/applets";
import { createJobLocksRepo } from "./db/repos/job-locks";
import { createMaintenanceRepo } from "./db/repos/maintenance";
import { createRunsRepo } from "./db/repos/runs";
import { createSecretsRepo } from "./db/repos/secrets";
import { createTriggerStateRepo } from "./db/repos/trigger-state";
import { createUsersRepo } from "./db/repos/users";
import { createWorkersRepo } from "./db/repos/workers";
import { Bus } from "./bus";
import { createSafeFetch } from "./net/safe-fetch";
import type { SafeFetch } from "./net/types";
import { createSecretsService, type SecretsService } from "./secrets";

/**
 * The services one process runs on. Built once by a composition root (server.ts, worker/index.ts)
 * or by a test, then passed down; nothing below reaches for globals.
 */
export interface App {
  config: AppConfig;
  clock: Clock;
  log: Logger;
  db: DbHandle;
  repos: {
    applets: ReturnType<typeof createAppletsRepo>;
    runs: ReturnType<typeof createRunsRepo>;
    triggerState: ReturnType<typeof createTriggerStateRepo>;
    secrets: ReturnType<typeof createSecretsRepo>;
    jobLocks: ReturnType<typeof createJobLocksRepo>;
    users: ReturnType<typeof createUsersRepo>;
    workers: ReturnType<typeof createWorkersRepo>;
    maintenance: ReturnType<typeof createMaintenanceRepo>;
    apiTokens: ReturnType<typeof createApiTokensRepo>;
  };
  secrets: SecretsService;
  bus: Bus;
  http: SafeFetch;
  close(): void;
}

export interface CreateAppOptions {
  config?: AppConfig;
  env?: Record<string, string | undefined>;
  clock?: Clock;
  log?: Logger;
  http?: SafeFetch;
  /**
   * The web process leaves WAL checkpoints out of its requests (see OpenOptions.walAutocheckpoint)
   * and runs them on a size and time bound in a thread of their own (lib/db/checkpoint.ts).
   */
  role?: "web" | "worker";
}

export function createApp(opts: CreateAppOptions = {}): App {
  const config = opts.config ?? loadConfig(opts.env ?? process.env);
  const db = openDatabase(config.databasePath, {
    synchronous: config.sqliteSynchronous,
    walAutocheckpoint: opts.role === "web" ? 10_000 : undefined,
  });
  const repos = {
    applets: createAppletsRepo(db.sqlite),
    runs: createRunsRepo(db.sqlite),
    triggerState: createTriggerStateRepo(db.sqlite),
    secrets: createSecretsRepo(db.sqlite),
    jobLocks: createJobLocksRepo(db.sqlite),
    users: createUsersRepo(db.sqlite),
    workers: createWorkersRepo(db.sqlite),
    maintenance: createMaintenanceRepo(db.sqlite),
    apiTokens: createApiTokensRepo(db.sqlite),
  };
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger("whenthen");
  const checkpointer = opts.role === "web" ? startWalCheckpointer({ file: config.databasePath, log: log.child("db"), clock }) : null;
  return {
    config,
    clock,
    log,
    db,
    repos,
    secrets: createSecretsService(repos.secrets, config.secretsKey, clock),
    bus: new Bus(),
    http: opts.http ?? createSafeFetch({ allowPrivate: config.allowPrivateUrls }),
    close: () => {
      void checkpointer?.stop();
      db.close();
    },
  };
}
