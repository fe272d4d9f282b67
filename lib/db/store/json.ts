/**
 * A JSON column read back. A row that is not JSON (edited by hand, written by a bug) throws an
 * error that says which row and column, so whoever meets it (the executor fails the run with it)
 * can tell the user what to fix.
 */
export function readJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new Error(`could not read ${what}: not valid JSON (${err instanceof Error ? err.message : String(err)})`, { cause: err });
  }
}

/**
 * How an engine hands back a JSON column: SQLite as the stored text, PostgreSQL (json columns)
 * already parsed. The row mappers both engines share (applet-row.ts, trigger-state-row.ts) take it.
 */
export type JsonColumns = "text" | "parsed";
