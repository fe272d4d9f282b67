import type { Clock } from "../core/clock";
import { UserError } from "../core/errors";
import { newId } from "../core/ids";
import { Lru } from "../core/lru";
import type { SecretsStore } from "../db/store";
import { SECRET_NAME, decryptSecret, encryptSecret } from "./crypto";

export type SecretsService = ReturnType<typeof createSecretsService>;

/** Resolves a secret by name, synchronously (templates render synchronously). */
export type SecretLookup = (name: string) => string | undefined;

export function createSecretsService(store: SecretsStore, key: Buffer, clock: Clock) {
  // Decrypting is a cipher context per value; a ciphertext (random IV each time a value is saved)
  // always decrypts to the same value, so each is decrypted once per process, bounded.
  const decrypted = new Lru<string, string>(1000);
  const decrypt = (name: string, enc: string): string => {
    const memo = decrypted.get(`${name}\n${enc}`);
    if (memo !== undefined) return memo;
    const value = decryptSecret(key, name, enc);
    decrypted.set(`${name}\n${enc}`, value);
    return value;
  };
  return {
    /** Names and dates only: values never leave the server once saved. */
    list: () => store.list(),
    /** Adds or rotates. */
    async set(name: string, value: string): Promise<void> {
      if (!SECRET_NAME.test(name)) throw new UserError(`secrets: name "${name}" must match [A-Z0-9_]+`, [{ path: "name", message: "use A–Z, 0–9 and _" }]);
      if (typeof value !== "string" || value === "") throw new UserError("secrets: value must be a non-empty string", [{ path: "value", message: "required" }]);
      await store.put(newId(), name, encryptSecret(key, name, value), clock.now().toISOString());
    },
    delete: (name: string): Promise<boolean> => store.delete(name),
    /** One secret, decrypted; undefined when there is none. */
    async resolve(name: string): Promise<string | undefined> {
      const stored = await store.getEncrypted(name);
      return stored === null ? undefined : decryptSecret(key, name, stored);
    },
    /**
     * The lazy resolver templates use, over one read of the stored ciphertexts: decrypts only the
     * secrets a config names, each at most once.
     */
    async lookup(): Promise<SecretLookup> {
      const stored = new Map((await store.allEncrypted()).map((s) => [s.name, s.valueEncrypted]));
      return (name) => {
        const enc = stored.get(name);
        return enc === undefined ? undefined : decrypt(name, enc);
      };
    },
  };
}
