import { hash, hashSync, verify, type Options } from "@node-rs/argon2";

/**
 * argon2id at OWASP's first recommended setting (19 MiB, 2 passes, 1 lane): ~tens of ms per hash
 * here, cheap enough for a login and expensive enough for a stolen database. The algorithm is the
 * library's default, Argon2id; `Algorithm` is a const enum that isolatedModules cannot reference,
 * so the tests assert the `$argon2id$` prefix instead.
 */
const OPTIONS: Options = { memoryCost: 19_456, timeCost: 2, parallelism: 1, outputLen: 32 };

export const hashPassword = (password: string): Promise<string> => hash(password, OPTIONS);

/** For start-up (ADMIN_PASSWORD), where nothing else is waiting on the event loop yet. */
export const hashPasswordSync = (password: string): string => hashSync(password, OPTIONS);

/** False on a wrong password and on a malformed stored hash: both mean "not this password". */
export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}
