import { z } from "zod";
import type { AppConfig } from "./core/config";
import type { Clock } from "./core/clock";
import type { Logger } from "./core/log";
import type { SafeFetch } from "./net/types";

/**
 * What triggers and actions share: UI metadata for the editor's generated forms. A plug-in never
 * touches the database; it gets everything through its context and returns what the engine stores.
 */
/**
 * How the editor shows a field. `cron` and `timezone` are text with their own widgets (the cron
 * preview, the zone picker): the kind says so, never the field's name.
 */
export type FieldKind = "text" | "textarea" | "select" | "secret" | "json" | "number" | "boolean" | "list" | "cron" | "timezone";

export interface FieldMeta {
  name: string;
  label: string;
  kind: FieldKind;
  help?: string;
  required?: boolean;
  placeholder?: string;
  /** For `select`. An option's own help is shown instead of the field's while it is chosen. */
  options?: { value: string; label: string; help?: string }[];
  /** Show the field only when another field of the same config has one of these values (push provider). */
  showWhen?: { field: string; equals: string[] };
  /** Whether the field is a template the "Insert ingredient" dropdown may write into. */
  template?: boolean;
  /**
   * A panel the editor shows below the plug-in's form about what this field makes of the config:
   * `notePath` the file a note is written to for the sample event (on the file name), `inboundAddress`
   * the address mail must be sent to (on the alias), `webhookUrl` where the URL that receives the
   * requests appears (on a webhook's signature header).
   */
  preview?: FieldPreview;
  /** For `list`: what one row is called ("Add column", "Remove column 2") and how rows are numbered ("Column A" or "#1"). */
  item?: { noun: string; numbering?: "letters" | "numbers" };
  /**
   * The field holds a credential (lib/applets/credentials): written literally (no `{{…}}`), it is
   * masked in version history and in what API tokens read, a save warns to move it to a secret,
   * and "purge this version's credentials" replaces it. `value`: the field's text (a `secret` field
   * is one unless it says otherwise); `authHeaders`: a headers object, whose values under names
   * that carry credentials (Authorization, Cookie, X-Api-Key, …) are.
   */
  credential?: CredentialKind;
  /**
   * For a `textarea` whose value may be text or a JSON value (the http body): the editor offers
   * "JSON (typed)", where the text is parsed and a string that is exactly one `{{…}}` keeps its
   * rendered value's type, and "Text", sent as written.
   */
  jsonMode?: boolean;
  /** For `select`: the value the schema fills in when the field is left out (shown as the default, so the form shows what is sent). */
  default?: string;
}

export type CredentialKind = "value" | "authHeaders";

export type FieldPreview = "notePath" | "inboundAddress" | "webhookUrl";

/** A field as its schema describes it: everything but the name, which is the schema key. */
export type FieldSpec = Omit<FieldMeta, "name">;

const SPEC_KEYS = ["label", "kind", "help", "required", "placeholder", "options", "showWhen", "template", "preview", "item", "credential", "jsonMode"] as const satisfies readonly (keyof FieldSpec)[];

/**
 * Describes a config field once, on its schema (zod 4 `.meta()`): the editor's form is generated
 * from the config schema's keys that carry one (`fieldsOf`). Put it on the outermost schema of the
 * key (after `.optional()`), where the object's shape holds it.
 */
export function field<T extends z.ZodType>(schema: T, spec: FieldSpec): T {
  return schema.meta(spec as z.core.$replace<z.core.GlobalMeta, T>);
}

/** The object schema under refinements and pipes: the one whose keys are the config's. */
export function objectShape(schema: z.ZodType): Record<string, z.ZodType> {
  let s: unknown = schema;
  for (let i = 0; i < 10 && s; i++) {
    if (s instanceof z.ZodObject) return s.shape;
    const def = (s as { _zod?: { def?: { in?: unknown; innerType?: unknown; schema?: unknown } } })._zod?.def;
    s = def?.in ?? def?.innerType ?? def?.schema;
  }
  throw new Error("plugin: a config schema must be an object schema (z.strictObject)");
}

/** The editor's fields, in the schema's key order: every key described with `field(…)`. */
export function fieldsOf(schema: z.ZodType): FieldMeta[] {
  const out: FieldMeta[] = [];
  for (const [name, keySchema] of Object.entries(objectShape(schema))) {
    const meta = keySchema.meta() as Partial<FieldSpec> | undefined;
    if (!meta?.kind || !meta.label) continue;
    const f: FieldMeta = { name, label: meta.label, kind: meta.kind };
    for (const k of SPEC_KEYS) if (meta[k] !== undefined) (f as unknown as Record<string, unknown>)[k] = meta[k];
    // A secret field is a credential by what it is; one that is not says so (there is none today).
    if (f.kind === "secret" && f.credential === undefined) f.credential = "value";
    if (f.kind === "select") {
      const d = schemaDefault(keySchema);
      if (typeof d === "string") f.default = d;
    }
    out.push(f);
  }
  return out;
}

/** The value a key's `.default(…)` fills in, if it has one. */
function schemaDefault(schema: z.ZodType): unknown {
  return schema instanceof z.ZodDefault ? (schema._zod.def as { defaultValue: unknown }).defaultValue : undefined;
}

/** The services every plug-in may use. Tests pass their own (a manual clock, msw behind safeFetch). */
export interface PluginContext {
  http: SafeFetch;
  clock: Clock;
  log: Logger;
  config: AppConfig;
}
