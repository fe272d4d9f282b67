import { createHmac } from "node:crypto";
import type { Queryable } from "./pool";
import { query } from "./pool";

export interface InstanceKeys {
  secretsKey: Buffer;
  sessionSecret: string;
}

/**
 * A fingerprint says whether two keys are the same without saying anything about the key: an HMAC
 * of a fixed label under the key, cut to 16 bytes. Only this is stored.
 */
export const keyFingerprint = (key: Buffer | string): string => createHmac("sha256", key).update("whenthen key fingerprint v1").digest("hex").slice(0, 32);

export class InstanceKeyMismatch extends Error {}

/**
 * On first start the database records the fingerprints of SECRETS_KEY and SESSION_SECRET; every
 * later process must bring the same keys. A host with another SECRETS_KEY would store secrets no
 * other host can read (and read none of theirs); another SESSION_SECRET logs users out whenever a
 * request lands on it. Such a process refuses to start instead.
 */
export async function checkInstanceKeys(q: Queryable, keys: InstanceKeys, now: Date): Promise<void> {
  const wanted = { secrets_key_fingerprint: keyFingerprint(keys.secretsKey), session_secret_fingerprint: keyFingerprint(keys.sessionSecret) };
  for (const [name, value] of Object.entries(wanted)) {
    await query(q, "INSERT INTO instance (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING", [name, value, now.toISOString()]);
  }
  const stored = new Map((await query<{ name: string; value: string }>(q, "SELECT name, value FROM instance")).rows.map((r) => [r.name, r.value]));
  const wrong = [
    stored.get("secrets_key_fingerprint") !== wanted.secrets_key_fingerprint ? "SECRETS_KEY" : null,
    stored.get("session_secret_fingerprint") !== wanted.session_secret_fingerprint ? "SESSION_SECRET" : null,
  ].filter((n): n is string => n !== null);
  if (wrong.length > 0) {
    throw new InstanceKeyMismatch(
      `postgres: ${wrong.join(" and ")} ${wrong.length > 1 ? "differ" : "differs"} from the one this database was initialised with ` +
        `(every process on every host must use the same value; copy it from a host that works). Refusing to start.`,
    );
  }
}
