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
  /** For `select`. */
  options?: { value: string; label: string }[];
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
}

export type FieldPreview = "notePath" | "inboundAddress" | "webhookUrl";

/** The services every plug-in may use. Tests pass their own (a manual clock, msw behind safeFetch). */
export interface PluginContext {
  http: SafeFetch;
  clock: Clock;
  log: Logger;
  config: AppConfig;
}
