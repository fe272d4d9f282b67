/** Secrets, stored encrypted. */
export interface SecretListing {
  name: string;
  createdAt: string;
  updatedAt: string;
}

/** Encrypted secrets (lib/secrets encrypts; the store keeps ciphertext only). */
export interface SecretsStore {
  /** Names with timestamps, ordered by name; never values. */
  list(): Promise<SecretListing[]>;
  /** The ciphertext, or null. */
  getEncrypted(name: string): Promise<string | null>;
  /**
   * Every name with its ciphertext, in one read (any order): a run, a poll or a signed webhook
   * renders its templates against this snapshot, decrypting only the names they use.
   */
  allEncrypted(): Promise<{ name: string; valueEncrypted: string }[]>;
  /** Upsert by name (a new row takes `id`; an existing one keeps its id and created_at). */
  put(id: string, name: string, encrypted: string, now: string): Promise<void>;
  delete(name: string): Promise<boolean>;
}
