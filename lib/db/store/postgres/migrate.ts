import { readFileSync } from "node:fs";
import path from "node:path";

/**
 * What the migrator needs of a connection: one session (the advisory lock is held by a session,
 * so every statement must go to the same one) that runs text with several statements.
 */
export interface MigrationSession {
  /** Runs one or more statements in the simple query protocol; resolves to the last one's rows. */
  exec(text: string): Promise<Record<string, unknown>[]>;
  /** One statement with parameters. */
  query(text: string, params: unknown[]): Promise<Record<string, unknown>[]>;
}

export interface PgMigrationResult {
  /** Tags this call applied (empty when another process had already applied them all). */
  applied: string[];
}

/** A fixed key of the session-level advisory lock every migrator of every process takes. */
export const MIGRATION_LOCK_KEY = 7_216_016_001;

interface Journal {
  entries: { idx: number; tag: string }[];
}

export function defaultPgMigrationsDir(): string {
  return path.resolve(process.env.PG_MIGRATIONS_DIR || path.join(process.cwd(), "drizzle-pg"));
}

/**
 * drizzle-kit writes foreign keys as `REFERENCES "public"."applets"`; the app's tables live in the
 * connection's search_path (public by default, a schema per test), so the schema name is dropped.
 */
export function unqualify(sql: string): string {
  return sql.replace(/REFERENCES "public"\./g, "REFERENCES ");
}

/**
 * Applies drizzle-pg/ migrations in order, each in its own transaction, under a session-level
 * `pg_advisory_lock`: ten processes starting at once queue on the lock, the first applies what is
 * missing, the others find every tag recorded and apply nothing. The lock is released on every
 * path (and by the server if the session dies).
 */
export async function migratePostgres(
  session: MigrationSession,
  dir = defaultPgMigrationsDir(),
  opts: { jobNames?: readonly string[]; /** Created under the lock when missing (the session's search_path names it). */ schema?: string } = {},
): Promise<PgMigrationResult> {
  const journal = JSON.parse(readFileSync(path.join(dir, "meta", "_journal.json"), "utf8")) as Journal;
  const applied: string[] = [];
  await session.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
  try {
    // Under the lock, so a second process opening the same schema at once never migrates into a
    // schema that does not exist yet.
    if (opts.schema) await session.exec(`CREATE SCHEMA IF NOT EXISTS ${opts.schema}`);
    await session.exec("CREATE TABLE IF NOT EXISTS _migrations (tag text PRIMARY KEY, applied_at text NOT NULL)");
    const done = new Set((await session.exec("SELECT tag FROM _migrations")).map((r) => String(r.tag)));
    for (const entry of [...journal.entries].sort((a, b) => a.idx - b.idx)) {
      if (done.has(entry.tag)) continue;
      const text = unqualify(readFileSync(path.join(dir, `${entry.tag}.sql`), "utf8"));
      const statements = text.split("--> statement-breakpoint").map((s) => s.trim()).filter(Boolean);
      await session.exec("BEGIN");
      try {
        for (const statement of statements) await session.exec(statement);
        await session.query("INSERT INTO _migrations (tag, applied_at) VALUES ($1, $2)", [entry.tag, new Date().toISOString()]);
        await session.exec("COMMIT");
      } catch (err) {
        await session.exec("ROLLBACK").catch(() => undefined);
        throw new Error(`postgres: migration ${entry.tag} failed: ${(err as Error).message}`, { cause: err });
      }
      applied.push(entry.tag);
    }
    for (const name of opts.jobNames ?? []) {
      await session.query("INSERT INTO job_locks (name) VALUES ($1) ON CONFLICT DO NOTHING", [name]);
    }
  } finally {
    await session.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => undefined);
  }
  return { applied };
}
