import type { App } from "../app";
import { missingSecretRefs, secretMissingMessage } from "../template/secret-refs";

/**
 * What a save does not refuse but should say: a template naming a secret that does not exist
 * renders empty, and the run then fails on the empty value. Same shape as a problem.
 */
export async function saveWarnings(app: Pick<App, "secrets">, definition: unknown): Promise<{ path: string; message: string }[]> {
  const known = (await app.secrets.list()).map((s) => s.name);
  return missingSecretRefs(definition as Parameters<typeof missingSecretRefs>[0], known).map((r) => ({ path: r.path, message: secretMissingMessage(r.name) }));
}
