import type { Clock } from "../core/clock";
import { UserError } from "../core/errors";
import { newId } from "../core/ids";
import type { SecretsRepo } from "../db/repos/secrets";
import { SECRET_NAME, decryptSecret, encryptSecret } from "./crypto";

export type SecretsService = ReturnType<typeof createSecretsService>;

export function createSecretsService(repo: SecretsRepo, key: Buffer, clock: Clock) {
  return {
    /** Names and dates only: values never leave the server once saved. */
    list: () => repo.list(),
    /** Adds or rotates. */
    set(name: string, value: string): void {
      if (!SECRET_NAME.test(name)) throw new UserError(`secrets: name "${name}" must match [A-Z0-9_]+`, [{ path: "name", message: "use A–Z, 0–9 and _" }]);
      if (typeof value !== "string" || value === "") throw new UserError("secrets: value must be a non-empty string", [{ path: "value", message: "required" }]);
      repo.put(newId(), name, encryptSecret(key, name, value), clock.now().toISOString());
    },
    delete: (name: string): boolean => repo.delete(name),
    /** The lazy resolver templates use: decrypts only the secrets a config names. */
    resolve(name: string): string | undefined {
      const stored = repo.getEncrypted(name);
      return stored === null ? undefined : decryptSecret(key, name, stored);
    },
  };
}
