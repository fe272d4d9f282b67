import type { App } from "../app";
import { pluginFields } from "../applets/credential-masks";
import { literalCredentials, literalCredentialWarning } from "../applets/credentials";
import { missingSecretRefs, secretMissingMessage } from "../template/secret-refs";

/**
 * What a save does not refuse but should say, in the shape of a problem: a template naming a
 * secret that does not exist renders empty (the run then fails on the empty value), and a
 * credential written literally is stored in the applet and its history (move it to a secret).
 */
export async function saveWarnings(app: Pick<App, "secrets">, definition: unknown): Promise<{ path: string; message: string }[]> {
  const known = (await app.secrets.list()).map((s) => s.name);
  return [
    ...missingSecretRefs(definition as Parameters<typeof missingSecretRefs>[0], known).map((r) => ({ path: r.path, message: secretMissingMessage(r.name) })),
    ...literalCredentials(definition, pluginFields).map(literalCredentialWarning),
  ];
}
