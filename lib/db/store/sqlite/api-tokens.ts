import type { ApiTokenRow } from "../types";
import type { Sqlite } from "./client";

/** API tokens by the SHA-256 of their value; lib/auth/tokens makes and checks them. */
export function createApiTokensRepo(sqlite: Sqlite) {
  type Raw = { id: string; name: string; prefix: string; read_only: number; last_used_at: string | null; expires_at: string | null; created_at: string };
  const toRow = (r: Raw): ApiTokenRow => ({ id: r.id, name: r.name, prefix: r.prefix, readOnly: r.read_only === 1, lastUsedAt: r.last_used_at, expiresAt: r.expires_at, createdAt: r.created_at });
  const columns = "id, name, prefix, read_only, last_used_at, expires_at, created_at";
  const list = sqlite.prepare<[], Raw>(`SELECT ${columns} FROM api_tokens ORDER BY created_at, id`);
  const byHash = sqlite.prepare<[string], Raw>(`SELECT ${columns} FROM api_tokens WHERE token_hash = ?`);
  const insert = sqlite.prepare("INSERT INTO api_tokens (id, name, token_hash, prefix, read_only, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  const touch = sqlite.prepare("UPDATE api_tokens SET last_used_at = ? WHERE id = ?");
  const remove = sqlite.prepare("DELETE FROM api_tokens WHERE id = ?");
  const named = sqlite.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM api_tokens WHERE name = ?");
  return {
    list: (): ApiTokenRow[] => list.all().map(toRow),
    byHash: (hash: string): ApiTokenRow | null => {
      const r = byHash.get(hash);
      return r ? toRow(r) : null;
    },
    nameTaken: (name: string): boolean => (named.get(name)?.n ?? 0) > 0,
    insert: (t: { id: string; name: string; hash: string; prefix: string; readOnly: boolean; expiresAt: string | null; now: string }): void =>
      void insert.run(t.id, t.name, t.hash, t.prefix, t.readOnly ? 1 : 0, t.expiresAt, t.now, t.now),
    touch: (id: string, now: string): void => void touch.run(now, id),
    delete: (id: string): boolean => remove.run(id).changes > 0,
  };
}
