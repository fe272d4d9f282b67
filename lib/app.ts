import { loadConfig, type AppConfig } from "./core/config";
import { systemClock, type Clock } from "./core/clock";
import { createLogger, type Logger } from "./core/log";
import { openStore, type Store } from "./db/store";
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
  /** Everything the app keeps (lib/db/store): the only way below this to the database. */
  store: Store;
  secrets: SecretsService;
  bus: Bus;
  http: SafeFetch;
  /** Closes the store (synchronously on SQLite when nothing is in flight). */
  close(): Promise<void>;
}

export interface CreateAppOptions {
  config?: AppConfig;
  env?: Record<string, string | undefined>;
  clock?: Clock;
  log?: Logger;
  http?: SafeFetch;
  /**
   * The web process leaves WAL checkpoints out of its requests (see OpenOptions.walAutocheckpoint)
   * and runs them on a size and time bound in a thread of their own (lib/db/store/sqlite/checkpoint.ts).
   */
  role?: "web" | "worker";
  /** A store opened by the caller (tests pick the engine); by default the one the config names. */
  store?: Store;
}

export function createApp(opts: CreateAppOptions = {}): App {
  const config = opts.config ?? loadConfig(opts.env ?? process.env);
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger("whenthen");
  const store =
    opts.store ??
    openStore({
      url: config.postgres?.url ?? config.databasePath,
      sqliteSynchronous: config.sqliteSynchronous,
      role: opts.role,
      log,
      clock,
      poolSize: config.postgres?.poolSize,
      listenUrl: config.postgres?.listenUrl,
      keys: { secretsKey: config.secretsKey, sessionSecret: config.sessionSecret },
    });
  return {
    config,
    clock,
    log,
    store,
    secrets: createSecretsService(store.secrets, config.secretsKey, clock),
    bus: new Bus(),
    http: opts.http ?? createSafeFetch({ allowPrivate: config.allowPrivateUrls }),
    close: () => store.close(),
  };
}
