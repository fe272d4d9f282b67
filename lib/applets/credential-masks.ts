import { createHmac } from "node:crypto";
import { actionRegistry } from "../actions";
import { triggerRegistry } from "../triggers";
import { actionCredentialSpots, credentialSpots, isLiteral, literalCredentials, maskedFingerprint, maskText, replaceSpots, type FieldsOf } from "./credentials";

/** The server's plug-in fields, from the registries (the browser reads the same from /api/meta). */
export const pluginFields: FieldsOf = (place, type) => (place === "trigger" ? triggerRegistry.get(type)?.fields : actionRegistry.get(type)?.fields);

export type CredentialMasks = ReturnType<typeof createCredentialMasks>;

/**
 * Masking literal credentials for views that must not show them (every stored version, and what an
 * API token reads), and putting them back when a masked definition is saved again (a token's
 * export applied with `whenthen applets import --dir`, a PUT of what GET answered).
 *
 * A mask carries a fingerprint: the first 12 hex of an HMAC-SHA256 of the value under a key of this
 * install (SESSION_SECRET), so the history's diff still shows that a credential changed, a masked
 * value is put back only where it is the same credential, and nothing about the value can be
 * learnt from it without the key.
 */
export function createCredentialMasks(key: string) {
  const fingerprint = (value: string): string => createHmac("sha256", key).update(value).digest("hex").slice(0, 12);
  const maskSpot = (s: { value: string }) => maskText(fingerprint(s.value));
  return {
    /** `definition` with every literal credential masked. */
    mask: <T>(definition: T): T => replaceSpots(definition, literalCredentials(definition, pluginFields), maskSpot),

    /** An alert channel (an action plug-in's config) with its literal credentials masked. */
    maskChannel<T extends { type: string; config: unknown }>(channel: T): T {
      const spots = actionCredentialSpots(channel, pluginFields).filter((s) => isLiteral(s.value));
      return spots.length ? { ...channel, config: replaceSpots(channel.config, spots, maskSpot) } : channel;
    },

    /**
     * `definition` with each masked credential replaced by the literal one of `stored` that has its
     * fingerprint (wherever it was there: actions may have moved). A mask with no match stays, for
     * the save to refuse.
     */
    unmask<T>(definition: T, stored: unknown): T {
      const masked = credentialSpots(definition, pluginFields).filter((s) => maskedFingerprint(s.value) !== null);
      if (masked.length === 0) return definition;
      const known = new Map(literalCredentials(stored, pluginFields).map((s) => [fingerprint(s.value), s.value]));
      return replaceSpots(
        definition,
        masked.filter((s) => known.has(maskedFingerprint(s.value)!)),
        (s) => known.get(maskedFingerprint(s.value)!)!,
      );
    },
  };
}
