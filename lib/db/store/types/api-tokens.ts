/** API tokens. */
/** An API token as lists show it; the value is never stored, only its SHA-256 (`hash`). */
export interface ApiTokenRow {
  id: string;
  name: string;
  prefix: string;
  readOnly: boolean;
  lastUsedAt: string | null;
  /** When it stops being accepted (ISO, UTC); null: never. */
  expiresAt: string | null;
  createdAt: string;
}

/** API tokens for scripts and the CLI, found by the SHA-256 of their value (lib/auth/tokens makes and checks them). */
export interface ApiTokensStore {
  /** Oldest first. */
  list(): Promise<ApiTokenRow[]>;
  byHash(hash: string): Promise<ApiTokenRow | null>;
  nameTaken(name: string): Promise<boolean>;
  /** Throws on a hash or id that exists (unique). */
  insert(t: { id: string; name: string; hash: string; prefix: string; readOnly: boolean; expiresAt: string | null; now: string }): Promise<void>;
  /** Sets last_used_at (the caller throttles). */
  touch(id: string, now: string): Promise<void>;
  /** Revokes: the row goes; false when there was none. */
  delete(id: string): Promise<boolean>;
}
