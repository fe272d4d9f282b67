import type { ApiTokenRow } from "./types";

/** The columns of an API token both engines read (never its hash). */
export const API_TOKEN_COLUMNS = "id, name, prefix, read_only, last_used_at, expires_at, created_at";

export interface ApiTokenRaw {
  id: string;
  name: string;
  prefix: string;
  read_only: number;
  last_used_at: string | null;
  expires_at: string | null;
  created_at: string;
}

export const toApiToken = (r: ApiTokenRaw): ApiTokenRow => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  readOnly: r.read_only === 1,
  lastUsedAt: r.last_used_at,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
});
