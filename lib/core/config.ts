import { randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * Every setting of the spec with its default; none is required on a laptop. `SESSION_SECRET` and
 * `SECRETS_KEY` are generated into files under DATA_DIR on first start when unset, so both
 * processes (web and worker) read the same values.
 */
export interface AppConfig {
  dataDir: string;
  /** The SQLite file (DATABASE_URL file:… or unset). Unused when `postgres` is set. */
  databasePath: string;
  /** Set when DATABASE_URL is postgres://… (or postgresql://…): the app stores everything there. */
  postgres?: PostgresConfig;
  adminEmail?: string;
  adminPassword?: string;
  sessionSecret: string;
  /** 32 bytes, AES-256-GCM key for secrets. */
  secretsKey: Buffer;
  publicUrl: string;
  /**
   * `pnpm dev` only (NEXT_ALLOWED_DEV_ORIGINS, empty in production): host names besides PUBLIC_URL's
   * that the UI and its API answer to, for opening the dev server from another machine on the LAN.
   */
  devHosts: string[];
  port: number;
  host: string;
  inboundDomain: string;
  /** INBOUND_EMAIL: whether the worker runs the SMTP receiver for email triggers (default true). */
  inboundEmail: boolean;
  smtpInboundPort: number;
  smtpUrl?: string;
  emailFrom: string;
  googleServiceAccountJson?: string;
  notesRoot: string;
  ntfyServer: string;
  ntfyToken?: string;
  pushoverAppToken?: string;
  pushoverUserKey?: string;
  openrouterApiKey?: string;
  openrouterBaseUrl: string;
  workerConcurrency: number;
  /** CPU priority (nice, 0–19) the worker gives itself so webhooks are answered first. */
  workerNice: number;
  /**
   * How long a worker's lease lasts without a heartbeat (WORKER_LEASE_SECONDS). The runs of a worker
   * whose lease expired (it crashed, or lost its disk) go back to the queue, so this bounds how long
   * one crash stalls an applet. The worker renews it every third of this (at most 15 s apart).
   */
  workerLeaseMs: number;
  /**
   * How old the last worker heartbeat may be before /api/health, the banner on every page and the
   * Health panel call the worker stopped (WORKER_STALE_SECONDS, default 60). It must exceed the
   * heartbeat interval (a third of the lease, at most 15 s), or a running worker would look stopped.
   */
  workerStaleMs: number;
  /**
   * On SIGTERM, how long runs in flight may take to finish before they are handed back to the queue
   * (WORKER_SHUTDOWN_SECONDS). Keep it below the stop grace period of whatever stops the worker
   * (docker-compose.yml sets stop_grace_period: 30s).
   */
  workerShutdownMs: number;
  /** How often the worker looks for alerts to send (ALERT_DISPATCH_MS, default 5 s). */
  alertDispatchMs: number;
  runRetentionDays: number;
  logLevel: string;
  allowPrivateUrls: boolean;
  /** Behind a reverse proxy: take the client address from the proxy's X-Forwarded-For entry. */
  trustProxy: boolean;
  /** `synchronous` pragma: NORMAL (default, WAL-safe against process crashes) or FULL (also against power loss). */
  sqliteSynchronous: "NORMAL" | "FULL";
}

export interface PostgresConfig {
  /** DATABASE_URL. May point at a connection pooler (PgBouncer in transaction mode is fine for it). */
  url: string;
  /**
   * DATABASE_LISTEN_URL, default DATABASE_URL: the one session connection per process that LISTENs
   * for run changes. LISTEN needs a session of its own, so behind a transaction-mode PgBouncer this
   * must be a direct URL to PostgreSQL (or to a session-mode pool).
   */
  listenUrl: string;
  /** DATABASE_POOL_SIZE: connections per process (default 10; the LISTEN session is one more). */
  poolSize: number;
}

type Env = Record<string, string | undefined>;

/** DATABASE_URL names PostgreSQL. */
export const isPostgresUrl = (url: string | undefined): url is string => !!url && /^postgres(ql)?:\/\//i.test(url.trim());

export function loadConfig(env: Env = process.env): AppConfig {
  const dataDir = path.resolve(env.DATA_DIR || "./data");
  mkdirSync(dataDir, { recursive: true });
  const onPostgres = isPostgresUrl(env.DATABASE_URL);
  const databasePath = onPostgres ? path.join(dataDir, "app.db") : resolveDatabasePath(env.DATABASE_URL, dataDir);
  const port = int(env, "PORT", 3000);
  // On PostgreSQL several hosts share one database, so a key generated here would differ from the
  // other hosts' (secrets written here unreadable there, sessions valid on one host only). Such a
  // key is never generated: it comes from the environment, or from the file of an install being
  // moved over (pnpm db:copy keeps the secrets encrypted with it). lib/db/store/postgres/instance.ts
  // then checks it against the fingerprint the database was initialised with.
  const secret = (name: "SECRETS_KEY" | "SESSION_SECRET"): string => {
    if (env[name]) return env[name];
    if (onPostgres && !existsSync(path.join(dataDir, name))) {
      throw new Error(
        `config: on PostgreSQL ${name} must be set (the same value on every host): it is not set and ${path.join(dataDir, name)} does not exist, ` +
          `so this process would generate a key of its own. Copy it from the first host, or create one with: openssl rand -base64 32`,
      );
    }
    return persistedSecret(dataDir, name);
  };
  const secretsKey = Buffer.from(secret("SECRETS_KEY"), "base64");
  if (secretsKey.length !== 32) {
    throw new Error(`config: SECRETS_KEY must be 32 bytes base64 encoded, got ${secretsKey.length} bytes`);
  }
  const sync = (env.SQLITE_SYNCHRONOUS || "NORMAL").toUpperCase();
  if (sync !== "NORMAL" && sync !== "FULL") throw new Error(`config: SQLITE_SYNCHRONOUS must be NORMAL or FULL, got "${sync}"`);
  const sessionSecret = secret("SESSION_SECRET");
  const poolSize = int(env, "DATABASE_POOL_SIZE", 10);
  if (poolSize < 1) throw new Error(`config: DATABASE_POOL_SIZE must be at least 1, got "${env.DATABASE_POOL_SIZE}"`);
  if (env.DATABASE_LISTEN_URL && !isPostgresUrl(env.DATABASE_LISTEN_URL)) {
    throw new Error("config: DATABASE_LISTEN_URL must be a postgres:// URL (a direct connection for LISTEN)");
  }
  return {
    dataDir,
    databasePath,
    postgres: onPostgres
      ? { url: env.DATABASE_URL!.trim(), listenUrl: (env.DATABASE_LISTEN_URL || env.DATABASE_URL!).trim(), poolSize }
      : undefined,
    adminEmail: env.ADMIN_EMAIL || undefined,
    adminPassword: env.ADMIN_PASSWORD || undefined,
    sessionSecret,
    secretsKey,
    publicUrl: (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, ""),
    devHosts: env.NODE_ENV === "production" ? [] : (env.NEXT_ALLOWED_DEV_ORIGINS ?? "").split(",").map((h) => h.trim().toLowerCase()).filter(Boolean),
    port,
    host: env.HOST || "0.0.0.0",
    inboundDomain: (env.INBOUND_DOMAIN || "localhost").toLowerCase(),
    inboundEmail: bool(env, "INBOUND_EMAIL", true),
    smtpInboundPort: int(env, "SMTP_INBOUND_PORT", 2525),
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || "automations@localhost",
    googleServiceAccountJson: env.GOOGLE_SERVICE_ACCOUNT_JSON || undefined,
    notesRoot: path.resolve(env.NOTES_ROOT || path.join(dataDir, "notes")),
    ntfyServer: (env.NTFY_SERVER || "https://ntfy.sh").replace(/\/+$/, ""),
    ntfyToken: env.NTFY_TOKEN || undefined,
    pushoverAppToken: env.PUSHOVER_APP_TOKEN || undefined,
    pushoverUserKey: env.PUSHOVER_USER_KEY || undefined,
    openrouterApiKey: env.OPENROUTER_API_KEY || undefined,
    openrouterBaseUrl: (env.OPENROUTER_BASE_URL || "https://openrouter.ai/api/v1").replace(/\/+$/, ""),
    workerConcurrency: int(env, "WORKER_CONCURRENCY", 4),
    workerNice: Math.min(int(env, "WORKER_NICE", 10), 19),
    workerLeaseMs: atLeast(env, "WORKER_LEASE_SECONDS", 30, 2) * 1000,
    workerStaleMs: staleAfter(env),
    workerShutdownMs: atLeast(env, "WORKER_SHUTDOWN_SECONDS", 20, 1) * 1000,
    alertDispatchMs: atLeast(env, "ALERT_DISPATCH_MS", 5000, 100),
    runRetentionDays: int(env, "RUN_RETENTION_DAYS", 30),
    logLevel: env.LOG_LEVEL || "info",
    allowPrivateUrls: env.ALLOW_PRIVATE_URLS === "true" || env.ALLOW_PRIVATE_URLS === "1",
    trustProxy: env.TRUST_PROXY === "true" || env.TRUST_PROXY === "1",
    sqliteSynchronous: sync,
  };
}

/** `file:./data/app.db`, a bare path, or unset (DATA_DIR/app.db); postgres:// is handled above. */
function resolveDatabasePath(url: string | undefined, dataDir: string): string {
  if (!url) return path.join(dataDir, "app.db");
  if (url.startsWith("file:")) return path.resolve(url.slice("file:".length));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new Error(`config: DATABASE_URL "${url.split(":")[0]}:" is not supported; use file:./data/app.db or postgres://user:password@host:5432/database`);
  }
  return path.resolve(url);
}

function int(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`config: ${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

/** WORKER_STALE_SECONDS, checked against the heartbeat interval WORKER_LEASE_SECONDS gives. */
function staleAfter(env: Env): number {
  const stale = atLeast(env, "WORKER_STALE_SECONDS", 60, 2);
  const beatSeconds = Math.min(15, atLeast(env, "WORKER_LEASE_SECONDS", 30, 2) / 3);
  if (stale <= beatSeconds) {
    throw new Error(`config: WORKER_STALE_SECONDS (${stale}) must be more than the worker's heartbeat interval (${beatSeconds} s: a third of WORKER_LEASE_SECONDS, at most 15 s)`);
  }
  return stale * 1000;
}

function atLeast(env: Env, name: string, fallback: number, min: number): number {
  const n = int(env, name, fallback);
  if (n < min) throw new Error(`config: ${name} must be at least ${min}, got "${env[name]}"`);
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = (env[name] ?? "").trim().toLowerCase();
  if (raw === "") return fallback;
  if (raw === "true" || raw === "1" || raw === "on") return true;
  if (raw === "false" || raw === "0" || raw === "off") return false;
  throw new Error(`config: ${name} must be true or false, got "${env[name]}"`);
}

/**
 * Reads DATA_DIR/<name>, creating it with 32 random bytes (base64) on first use. The web process
 * and the worker start at once on a new DATA_DIR (`pnpm start`, `pnpm dev`), so the file appears
 * whole or not at all: it is written under a name of this process's own and linked into place,
 * which fails if another process got there first (its file is whole too, and both use it).
 */
function persistedSecret(dataDir: string, name: string): string {
  const file = path.join(dataDir, name);
  if (!existsSync(file)) createWhole(file, randomBytes(32).toString("base64") + "\n");
  return readWhole(file, name);
}

function createWhole(file: string, content: string): void {
  const own = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(own, content, { flag: "wx", mode: 0o600 });
  try {
    linkSync(own, file);
  } catch (err) {
    // EEXIST: another process made it first. Otherwise a file system without hard links: the file
    // is created in place (a reader then waits for its content), unless another process did.
    if (!exists(err)) {
      try {
        writeFileSync(file, content, { flag: "wx", mode: 0o600 });
      } catch (again) {
        if (!exists(again)) throw again;
      }
    }
  } finally {
    rmSync(own, { force: true });
  }
}

const exists = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === "EEXIST";

/** The file's value; an empty file is one still being written by another process (waited for up to 2 s). */
function readWhole(file: string, name: string): string {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; ; waited += 50) {
    const value = readFileSync(file, "utf8").trim();
    if (value) return value;
    if (waited >= 2_000) throw new Error(`config: ${file} is empty: set ${name} in the environment, or delete the file when nothing was stored with it yet (a new one is made)`);
    Atomics.wait(pause, 0, 0, 50);
  }
}
