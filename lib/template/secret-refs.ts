/**
 * The secrets a definition's templates name (`{{secrets.SLACK_WEBHOOK}}`, `{{ secrets.T | urlencode }}`),
 * with where they are, so a save can warn about one that does not exist before a run fails on it.
 * Pure: the caller passes the names that exist.
 */
import { looseSteps, NESTED_KEYS } from "../definition/loose";
export interface SecretRef {
  /** Where the template is, e.g. `definition.steps.0.config.webhook_url`. */
  path: string;
  name: string;
}

/**
 * Whether a template anywhere in `value` could name a stored secret: every reference spells the
 * word (the path's root is `secrets`), so a config whose JSON never does needs no lookup of the
 * stored secrets at all. Errs towards true (the word in plain text counts too).
 */
export function mayNameSecrets(value: unknown): boolean {
  return JSON.stringify(value ?? null).includes("secrets");
}

const REF = /(?<!\\)\{\{\s*secrets\.([A-Za-z0-9_]+)/g;

export function secretRefs(value: unknown, path: string, out: SecretRef[] = []): SecretRef[] {
  if (typeof value === "string") {
    for (const m of value.matchAll(REF)) out.push({ path, name: m[1]! });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => secretRefs(v, `${path}.${i}`, out));
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) secretRefs(v, `${path}.${k}`, out);
  }
  return out;
}

/**
 * The references in a definition's templates to secrets not in `known`: the trigger's config and
 * every step's own fields (an action's config, an AI prompt, a for each's list, a stop's reason),
 * version 1 or 2; filter code is code, not a template, and nested steps are scanned as themselves.
 */
export function missingSecretRefs(definition: unknown, known: Iterable<string>): SecretRef[] {
  if (!definition || typeof definition !== "object") return [];
  const have = new Set(known);
  const trigger = (definition as { trigger?: { config?: unknown } }).trigger;
  const refs = [...secretRefs(trigger?.config, "definition.trigger.config")];
  for (const s of looseSteps(definition)) {
    if (s.type === "filter") continue;
    for (const [key, value] of Object.entries(s.step)) {
      if (NESTED_KEYS.has(key) || (s.type === "for_each" && key === "steps")) continue;
      secretRefs(value, `definition.${s.path}.${key}`, refs);
    }
  }
  return refs.filter((r) => !have.has(r.name));
}

/** What a run error says when templates named secrets that do not exist (their render warnings). */
export function missingSecretsCause(warnings: string[]): string | null {
  const names = [...new Set(warnings.filter((w) => w.startsWith("unresolved: secrets.")).map((w) => w.slice("unresolved: secrets.".length)))];
  if (!names.length) return null;
  return `${names.map((n) => `unresolved: secrets.${n}`).join(", ")} (no secret with ${names.length === 1 ? "this name" : "these names"} exists)`;
}

/** The warning for a reference to a secret that does not exist, on save and in the editor. */
export const secretMissingMessage = (name: string): string => `There is no secret named ${name} (add it in Settings → Secrets); a run would render it empty.`;
