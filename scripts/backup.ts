/**
 * The copy step of scripts/backup.sh for machines without the sqlite3 CLI:
 *
 *   tsx scripts/backup.ts <live database> <destination>
 *   tsx scripts/backup.ts --check <database file>     prints integrity_check's answer ("ok" when sound)
 *
 * Takes SQLite's online backup through better-sqlite3 inside one read transaction, switches the
 * copy to journal_mode=DELETE (one self-contained file) and runs PRAGMA integrity_check on it,
 * exiting non-zero unless it reports "ok". Naming, renaming and pruning stay in backup.sh.
 */
import Database from "better-sqlite3";
import { existsSync } from "node:fs";

async function snapshot(source: string, destination: string): Promise<void> {
  if (!existsSync(source)) throw new Error(`backup: no database at ${source}`);
  // Not readonly: a read-only handle cannot create the -shm a WAL reader may need.
  const src = new Database(source, { fileMustExist: true });
  try {
    src.pragma("busy_timeout = 10000");
    // db.backup() copies in steps and restarts whenever another process commits between two of
    // them, so against a busy worker it may never finish. An open read transaction pins the
    // snapshot every step reads from, which makes the copy one consistent version.
    src.exec("BEGIN");
    try {
      src.prepare("SELECT count(*) FROM sqlite_schema").get();
      await src.backup(destination);
    } finally {
      src.exec("COMMIT");
    }
  } finally {
    src.close();
  }
  const result = integrity(destination, true);
  if (result !== "ok") throw new Error(`backup: integrity_check of ${destination} failed: ${result}`);
}

/** PRAGMA integrity_check's rows joined; "ok" when the file is sound. */
function integrity(file: string, makeStandalone: boolean): string {
  const db = new Database(file, { fileMustExist: true });
  try {
    if (makeStandalone) db.pragma("journal_mode = DELETE");
    const rows = db.pragma("integrity_check") as { integrity_check: string }[];
    return rows.map((r) => r.integrity_check).join("; ");
  } finally {
    db.close();
  }
}

const args = process.argv.slice(2);
if (args[0] === "--check" && args[1]) {
  try {
    console.log(integrity(args[1], false));
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
} else if (args.length === 2 && args[0] && args[1]) {
  snapshot(args[0], args[1]).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  });
} else {
  console.error("usage: tsx scripts/backup.ts <live database> <destination> | --check <database file>");
  process.exit(2);
}
