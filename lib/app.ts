import { loadConfig, type AppConfig } from "./core/config";
import { systemClock, type Clock } from "./core/clock";
import { createLogger, type Logger } from "./core/log";
import { alertPolicy } from "./alerts/policy";
import { openStore, type Store } from "./db/store";
import { explainUnavailable } from "./db/store/postgres/pool";
import { isDatabaseError } from "./core/errors";
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
      alertPolicy,
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

/**
 * Waits until the store is ready (PostgreSQL: reachable, migrated, keys checked). A database that
 * is away or refuses this process for a while (not up yet, a wrong password, too many clients) is
 * said in one line per attempt and tried again with back-off up to 30 s, not exited on: a process
 * manager restarting the process would only meet the same server. Anything else (keys that differ
 * from the database's, a migration that fails) rejects: the process must not start.
 */
export async function waitForStore(app: Pick<App, "store" | "config" | "log">, opts: { sleep?: (ms: number) => Promise<void>; maxMs?: number } = {}): Promise<void> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const maxMs = opts.maxMs ?? 30_000;
  for (let attempt = 0; ; attempt++) {
    try {
      await app.store.ready?.();
      if (attempt > 0) app.log.info("postgres: the database answers now; starting");
      return;
    } catch (err) {
      if (!isDatabaseError(err)) throw err;
      const wait = Math.min(maxMs, 1_000 * 2 ** Math.min(attempt, 5));
      app.log.error(`${explainUnavailable(err, app.config.postgres?.url ?? "")}; trying again in ${Math.round(wait / 1000)} s`);
      await sleep(wait);
    }
  }
}
