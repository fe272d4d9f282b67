import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import type pg from "pg";
import { inTransaction, queryDynamic } from "./postgres/pool";

/**
 * `pnpm db:copy`: every row of a SQLite install into an empty PostgreSQL database (migrated by the
 * PostgreSQL store first). The two schemas have the same tables and columns (lib/db/store/postgres/schema.ts,
 * tests/unit/pg-schema.test.ts), so each table is copied column for column; JSON text becomes
 * json. One transaction: a copy that fails leaves the target as it was.
 */
export const COPIED_TABLES = ["users", "applets", "applet_versions", "trigger_state", "events", "runs", "planned_runs", "planned_subjects", "secrets", "job_locks", "workers", "api_tokens", "alert_settings", "alerts", "event_files"] as const;
export type CopiedTable = (typeof COPIED_TABLES)[number];

const BATCH = 500;
/** Attachments are up to 5 MB each: a batch also ends at this many bytes of BLOBs. */
const BATCH_BYTES = 16 * 1024 * 1024;

export async function copySqliteToPostgres(opts: { from: string; pool: pg.Pool; log?: (line: string) => void }): Promise<Record<CopiedTable, number>> {
  if (!existsSync(opts.from)) throw new Error(`db:copy: ${opts.from} does not exist`);
  const sqlite = new Database(opts.from, { readonly: true, fileMustExist: true });
  try {
    // One read transaction: a snapshot, even while the old install is still running.
    sqlite.exec("BEGIN");
    const counts = {} as Record<CopiedTable, number>;
    await inTransaction(opts.pool, async (c) => {
      const existing = (await queryDynamic<{ n: number }>(c, "SELECT (SELECT COUNT(*) FROM applets)::int + (SELECT COUNT(*) FROM runs)::int + (SELECT COUNT(*) FROM users)::int AS n")).rows[0]!.n;
      if (existing > 0) throw new Error("db:copy: the target database already has applets, runs or users; copy into an empty database");
      // A row trigger would announce every copied run; the listeners hear one wake-up at the end.
      await c.query("ALTER TABLE runs DISABLE TRIGGER runs_notify");
      for (const table of COPIED_TABLES) {
        // A table an older install never had (api_tokens, event_files) has nothing to copy.
        if (!sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table)) {
          counts[table] = 0;
          continue;
        }
        const columns = sqlite.prepare<[], { name: string }>(`SELECT name FROM pragma_table_info('${table}')`).all().map((r) => r.name);
        const quoted = columns.map((c) => `"${c}"`).join(", ");
        // The migrations seed the named job locks; the copied rows replace them.
        const conflict = table === "job_locks" ? `ON CONFLICT (name) DO UPDATE SET ${columns.filter((c) => c !== "name").map((c) => `"${c}" = excluded."${c}"`).join(", ")}` : "";
        let n = 0;
        let batch: unknown[][] = [];
        let bytes = 0;
        const flush = async () => {
          if (batch.length === 0) return;
          const values = batch.map((_, i) => `(${columns.map((__, j) => `$${i * columns.length + j + 1}`).join(", ")})`).join(", ");
          await queryDynamic(c, `INSERT INTO ${table} (${quoted}) VALUES ${values} ${conflict}`, batch.flat());
          n += batch.length;
          batch = [];
          bytes = 0;
        };
        for (const row of sqlite.prepare(`SELECT ${quoted} FROM ${table}`).raw().iterate() as IterableIterator<unknown[]>) {
          batch.push(row);
          for (const v of row) if (Buffer.isBuffer(v)) bytes += v.length;
          if (batch.length === BATCH || bytes >= BATCH_BYTES) await flush();
        }
        await flush();
        counts[table] = n;
        opts.log?.(`db:copy: ${table}: ${n} row(s)`);
      }
      await c.query("ALTER TABLE runs ENABLE TRIGGER runs_notify");
      await c.query("NOTIFY whenthen_queued");
    });
    sqlite.exec("COMMIT");
    return counts;
  } finally {
    sqlite.close();
  }
}
