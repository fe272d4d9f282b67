import type { SecretListing } from "../types";
import type { Sqlite } from "./client";

/** Rows of encrypted secrets; encryption lives in lib/secrets (this only stores the ciphertext). */
export function createSecretsRepo(sqlite: Sqlite) {
  const list = sqlite.prepare<[], { name: string; created_at: string; updated_at: string }>(
    "SELECT name, created_at, updated_at FROM secrets ORDER BY name",
  );
  const get = sqlite.prepare<[string], { value_encrypted: string }>("SELECT value_encrypted FROM secrets WHERE name = ?");
  const upsert = sqlite.prepare(
    `INSERT INTO secrets (id, name, value_encrypted, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT(name) DO UPDATE SET value_encrypted = excluded.value_encrypted, updated_at = excluded.updated_at`,
  );
  const all = sqlite.prepare<[], { name: string; value_encrypted: string }>("SELECT name, value_encrypted FROM secrets");
  const remove = sqlite.prepare("DELETE FROM secrets WHERE name = ?");
  return {
    list: (): SecretListing[] => list.all().map((r) => ({ name: r.name, createdAt: r.created_at, updatedAt: r.updated_at })),
    getEncrypted: (name: string): string | null => get.get(name)?.value_encrypted ?? null,
    allEncrypted: () => all.all().map((r) => ({ name: r.name, valueEncrypted: r.value_encrypted })),
    put: (id: string, name: string, encrypted: string, now: string): void => void upsert.run(id, name, encrypted, now, now),
    delete: (name: string): boolean => remove.run(name).changes > 0,
  };
}
