import { API_TOKEN_COLUMNS, toApiToken, type ApiTokenRaw } from "../api-token-row";
import type { ApiTokensStore } from "../types";
import { query, type Queryable } from "./pool";

export function apiTokensStore(q: Queryable): ApiTokensStore {
  return {
    list: async () => (await query<ApiTokenRaw>(q, `SELECT ${API_TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, id`)).rows.map(toApiToken),
    byHash: async (hash) => {
      const r = (await query<ApiTokenRaw>(q, `SELECT ${API_TOKEN_COLUMNS} FROM api_tokens WHERE token_hash = $1`, [hash])).rows[0];
      return r ? toApiToken(r) : null;
    },
    nameTaken: async (name) => (await query(q, "SELECT 1 FROM api_tokens WHERE name = $1", [name])).rows.length > 0,
    insert: async (t) => {
      await query(q, "INSERT INTO api_tokens (id, name, token_hash, prefix, read_only, expires_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)", [t.id, t.name, t.hash, t.prefix, t.readOnly ? 1 : 0, t.expiresAt, t.now]);
    },
    touch: async (id, now) => {
      await query(q, "UPDATE api_tokens SET last_used_at = $1 WHERE id = $2", [now, id]);
    },
    delete: async (id) => ((await query(q, "DELETE FROM api_tokens WHERE id = $1", [id])).rowCount ?? 0) > 0,
  };
}
