import type { SecretsStore } from "../types";
import { query, type Queryable } from "./pool";

export function secretsStore(q: Queryable): SecretsStore {
  return {
    list: async () =>
      (await query<{ name: string; created_at: string; updated_at: string }>(q, "SELECT name, created_at, updated_at FROM secrets ORDER BY name")).rows.map((r) => ({
        name: r.name,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      })),
    getEncrypted: async (name) => (await query<{ value_encrypted: string }>(q, "SELECT value_encrypted FROM secrets WHERE name = $1", [name])).rows[0]?.value_encrypted ?? null,
    allEncrypted: async () =>
      (await query<{ name: string; value_encrypted: string }>(q, "SELECT name, value_encrypted FROM secrets")).rows.map((r) => ({ name: r.name, valueEncrypted: r.value_encrypted })),
    put: async (id, name, encrypted, now) => {
      await query(
        q,
        `INSERT INTO secrets (id, name, value_encrypted, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (name) DO UPDATE SET value_encrypted = excluded.value_encrypted, updated_at = excluded.updated_at`,
        [id, name, encrypted, now],
      );
    },
    delete: async (name) => ((await query(q, "DELETE FROM secrets WHERE name = $1", [name])).rowCount ?? 0) > 0,
  };
}
