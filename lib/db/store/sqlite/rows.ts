import type { Table } from "drizzle-orm";

/**
 * The row a `SELECT *` hands back from better-sqlite3, derived from the Drizzle table (type only:
 * drizzle-orm is not loaded at run time): keyed by column name, JSON columns as their stored text,
 * nullable where the schema allows null. lib/db/store/sqlite/schema.ts stays the one description of each table.
 */
export type RawRow<T extends Table> = {
  [K in keyof T["_"]["columns"] as T["_"]["columns"][K]["_"]["name"]]: RawValue<T["_"]["columns"][K]["_"]>;
};

type RawValue<C extends { data: unknown; notNull: boolean; columnType: string }> =
  | (C["columnType"] extends "SQLiteTextJson" ? string : C["data"])
  | (C["notNull"] extends true ? never : null);
