import type { FieldMeta } from "../plugin";
import { parseTemplate } from "../template/parse";
import { looseActions } from "../definition/loose";

/**
 * Credentials in applet definitions, the pure part: where they are (the config fields a plug-in
 * marks `credential`, lib/plugin), which are written literally, and a definition with them replaced
 * (masked for a view, purged from a stored version). No I/O and no crypto, so the editor uses the
 * same rules in the browser (from /api/meta's fields) as the server does (from the registries).
 *
 * A value is literal when it has no `{{…}}` expression at all: `whsec_…`, a Slack webhook URL as
 * pasted. One that names a secret (`{{secrets.SLACK_WEBHOOK}}`, `Bearer {{secrets.T}}`) or an
 * ingredient is not stored as a credential, so it is shown as written.
 */

/** The config fields of a plug-in: a trigger's or an action's, by type; undefined for an unknown type. */
export type FieldsOf = (place: "trigger" | "action", type: string) => readonly FieldMeta[] | undefined;

/** One credential value in a definition. */
export interface CredentialSpot {
  /** Keys from the definition's root: ["steps", "0", "config", "headers", "Authorization"] (["actions", "0", …] in a version 1 document). */
  path: string[];
  /** What the editor calls it: "Action 1 (slack): Webhook URL", "Trigger: Secret", "Action 2 (http): Headers › Authorization". */
  label: string;
  value: string;
}

/** What a purge leaves where a literal credential was: plain to read, and refused if saved again. */
export const PURGED_CREDENTIAL = "[credential purged]";

/** A masked credential: a fingerprint tells two values apart without showing either. */
export const maskText = (fingerprint: string): string => `[hidden credential ${fingerprint}]`;
const MASK = /^\[hidden credential ([0-9a-f]{12})\]$/;
/** The fingerprint of a masked value, or null for any other text. */
export const maskedFingerprint = (value: string): string | null => MASK.exec(value)?.[1] ?? null;

/** Header names whose values carry credentials, in an `authHeaders` field. */
const AUTH_HEADER = /^(authorization|proxy-authorization|cookie)$|token|secret|key|passw|signature|auth|session/i;

/** No `{{…}}` expression anywhere: the text itself is the credential. */
export function isLiteral(value: string): boolean {
  if (value.trim() === "" || value === PURGED_CREDENTIAL || maskedFingerprint(value) !== null) return false;
  return !parseTemplate(value).some((piece) => piece.kind === "expr");
}

type Config = Record<string, unknown>;
const isRecord = (v: unknown): v is Config => typeof v === "object" && v !== null && !Array.isArray(v);

/** The credential values of one plug-in config, found through its fields' `credential` marks. */
function spotsIn(config: unknown, fields: readonly FieldMeta[] | undefined, at: string[], where: string): CredentialSpot[] {
  if (!isRecord(config) || !fields) return [];
  const out: CredentialSpot[] = [];
  for (const f of fields) {
    const value = config[f.name];
    if (f.credential === "value" && typeof value === "string") out.push({ path: [...at, f.name], label: `${where}: ${f.label}`, value });
    if (f.credential === "authHeaders" && isRecord(value)) {
      for (const [header, v] of Object.entries(value)) {
        if (typeof v === "string" && AUTH_HEADER.test(header)) out.push({ path: [...at, f.name, header], label: `${where}: ${f.label} › ${header}`, value: v });
      }
    }
  }
  return out;
}

/** Every credential value of a definition (its trigger's and each action's), literal or not. */
export function credentialSpots(definition: unknown, fieldsOf: FieldsOf): CredentialSpot[] {
  if (!isRecord(definition)) return [];
  const trigger = isRecord(definition.trigger) ? definition.trigger : {};
  const out = spotsIn(trigger.config, fieldsOf("trigger", String(trigger.type)), ["trigger", "config"], "Trigger");
  // Version 1's actions or version 2's action steps, nested ones included (a stored row may be either).
  for (const a of looseActions(definition)) {
    const n = /^action_(\d+)$/.exec(a.id ?? "");
    const label = n ? `Action ${n[1]} (${a.type})` : `Step ${a.id ?? a.path} (${a.type})`;
    out.push(...spotsIn(a.config, fieldsOf("action", a.type), [...a.path.split("."), "config"], label));
  }
  return out;
}

/** The credentials written literally, which a save warns about and a purge replaces. */
export const literalCredentials = (definition: unknown, fieldsOf: FieldsOf): CredentialSpot[] => credentialSpots(definition, fieldsOf).filter((s) => isLiteral(s.value));

/** The credential values of one action config (a step's rendered config, an alert channel's), path from the config. */
export const actionCredentialSpots = (action: { type: string; config: unknown }, fieldsOf: FieldsOf): CredentialSpot[] =>
  spotsIn(action.config, fieldsOf("action", action.type), [], `Action (${action.type})`);

/** The save warning for a literal credential, at the path the editor places it. */
export const literalCredentialWarning = (spot: CredentialSpot): { path: string; message: string } => ({
  path: `definition.${spot.path.join(".")}`,
  message: `${spot.label} is written literally, so it is stored in the applet and in every version of its history: move it to a secret (Settings → Secrets) and write {{secrets.NAME}} here instead.`,
});

/**
 * A deep copy of `value` with each spot's value replaced by `replace(spot)` (unchanged where it
 * returns the value itself). Paths are those `credentialSpots` gave for the same value.
 */
export function replaceSpots<T>(value: T, spots: readonly CredentialSpot[], replace: (spot: CredentialSpot) => string): T {
  if (spots.length === 0) return value;
  const copy = structuredClone(value) as unknown;
  for (const spot of spots) {
    let node = copy as Config;
    for (const key of spot.path.slice(0, -1)) node = node[key] as Config;
    node[spot.path[spot.path.length - 1]!] = replace(spot);
  }
  return copy as T;
}
