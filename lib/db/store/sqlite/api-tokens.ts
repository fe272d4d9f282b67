import { API_TOKEN_COLUMNS, toApiToken, type ApiTokenRaw } from "../api-token-row";
import type { ApiTokenRow } from "../types";
import type { Sqlite } from "./client";

/** API tokens by the SHA-256 of their value; lib/auth/tokens makes and checks them. */
export function createApiTokensRepo(sqlite: Sqlite) {
  const list = sqlite.prepare<[], ApiTokenRaw>(`SELECT ${API_TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, id`);
  const byHash = sqlite.prepare<[string], ApiTokenRaw>(`SELECT ${API_TOKEN_COLUMNS} FROM api_tokens WHERE token_hash = ?`);
  const insert = sqlite.prepare("INSERT INTO api_tokens (id, name, token_hash, prefix, read_only, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  const touch = sqlite.prepare("UPDATE api_tokens SET last_used_at = ? WHERE id = ?");
  const remove = sqlite.prepare("DELETE FROM api_tokens WHERE id = ?");
  const named = sqlite.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM api_tokens WHERE name = ?");
  return {
    list: (): ApiTokenRow[] => list.all().map(toApiToken),
    byHash: (hash: string): ApiTokenRow | null => {
      const r = byHash.get(hash);
      return r ? toApiToken(r) : null;
    },
    nameTaken: (name: string): boolean => (named.get(name)?.n ?? 0) > 0,
    insert: (t: { id: string; name: string; hash: string; prefix: string; readOnly: boolean; expiresAt: string | null; now: string }): void =>
      void insert.run(t.id, t.name, t.hash, t.prefix, t.readOnly ? 1 : 0, t.expiresAt, t.now, t.now),
    touch: (id: string, now: string): void => void touch.run(now, id),
    delete: (id: string): boolean => remove.run(id).changes > 0,
  };
}
