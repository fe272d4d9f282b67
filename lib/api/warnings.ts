import type { App } from "../app";
import { pluginFields } from "../applets/credential-masks";
import { literalCredentials, literalCredentialWarning } from "../applets/credentials";
import { pathAsWritten, sampleFieldWarnings, storedDefinition } from "../definition";
import { missingSecretRefs, secretMissingMessage } from "../template/secret-refs";
import { triggerRegistry } from "../triggers";

/**
 * What a save does not refuse but should say, in the shape of a problem: a template naming a
 * secret that does not exist renders empty (the run then fails on the empty value), a credential
 * written literally is stored in the applet and its history (move it to a secret), and a condition
 * on a trigger field the trigger's sample does not have (a typo, or a field only some events carry).
 *
 * `definition` is the stored one (version 2); `asWritten`, when given, is the document the save
 * sent, so a version 1 document's warnings name its own paths (`definition.actions.0…`).
 */
export async function saveWarnings(app: Pick<App, "secrets">, definition: unknown, asWritten?: unknown): Promise<{ path: string; message: string }[]> {
  const known = (await app.secrets.list()).map((s) => s.name);
  const stored = storedDefinition(definition);
  const sample = triggerRegistry.get(stored.trigger.type)?.sample;
  const warnings = [
    ...missingSecretRefs(definition, known).map((r) => ({ path: r.path, message: secretMissingMessage(r.name) })),
    ...literalCredentials(definition, pluginFields).map(literalCredentialWarning),
    ...(sample ? sampleFieldWarnings(stored, sample).map((w) => ({ path: `definition.${w.path}`, message: w.message })) : []),
  ];
  if (asWritten === undefined) return warnings;
  return warnings.map((w) => (w.path.startsWith("definition.") ? { ...w, path: `definition.${pathAsWritten(asWritten, stored, w.path.slice("definition.".length))}` } : w));
}
