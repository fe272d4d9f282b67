import type { z } from "zod";
import type { PluginContext } from "../plugin";

export interface ActionRunInfo {
  runId: string;
  appletId: string;
  eventId: string;
  attempt: number;
  /** Position of this action in the applet's `actions` array. */
  actionIndex: number;
}

export interface ActionContext extends PluginContext {
  run: ActionRunInfo;
  /**
   * `<event_id>:<index>`, or `<event_id>:<index>:<run_id>` for a replay: stable across retries and
   * crash re-runs of one run, for providers that dedupe; a replay is meant to be delivered again.
   */
  idempotencyKey: string;
  /** Adds a warning to this step's `warnings`. */
  warn(message: string): void;
  /**
   * What an earlier attempt of this same step recorded with `saveProgress` (undefined on a first
   * attempt). An action that sends in parts (Discord chunks) resumes after the last accepted part.
   */
  progress: unknown;
  /** Persists progress at once (before the next part is sent), so a crash cannot lose it. */
  saveProgress(progress: unknown): Promise<void>;
  /**
   * Registers a value as secret for the rest of this run: from now on it is replaced by
   * "[redacted]" (in every form the run's redactor knows) in the step's error, output, progress,
   * warnings and logs, like a `{{secrets.NAME}}` value. For a token the action takes from an env
   * var, or one it puts in a URL path (a Telegram bot token).
   */
  secret(value: string): void;
  /** A copy of `value` with every secret of this run replaced by "[redacted]". */
  redact<T>(value: T): T;
  /**
   * The approve and deny links of the wait the run reaches next (`{{run.approve_url}}`,
   * `{{run.deny_url}}`), for an action's `approval_buttons`; null or absent where the run has none
   * (a dry run, a preview).
   */
  waitLinks?(): { approve_url: string; deny_url: string } | null;
}

export interface ActionResult {
  output: unknown;
}

/**
 * What a dry run shows for an action that does not send through `ctx.http`: the file a note would
 * write, the message an email would send, the MQTT message, the API call a client library makes.
 * `summary` is one line for the run tree ("would create notes/a.md"); the rest is the detail.
 */
export interface DryRunRecord {
  kind: "file" | "email" | "mqtt" | "api";
  summary: string;
  [detail: string]: unknown;
}

/** The answer a dry run gives a plug-in's request in place of its service: what the service says on success. */
export interface DryRunAnswer {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

/** An alert as a channel receives it (lib/alerts/message.ts words it): a title, the text and the run's link. */
export interface AlertText {
  title: string;
  text: string;
  link: string;
  /** What identifies the alert: `alert_id`, `applet_id` and `kind` when sent; empty when a channel is checked on save. */
  facts: Record<string, unknown>;
}

/**
 * What an action declares to be offered as a failure-alert channel (Settings, an applet's page):
 * the channel's config is the action's config without the message fields, which whenthen writes
 * for each alert with `fill`.
 */
export interface AlertChannelSpec {
  /** The channel's name in the picker ("Push (ntfy / Pushover)"). */
  label: string;
  /** One line shown under the picker while the channel is chosen. */
  help?: string;
  /** The config keys that carry the message: left out of the channel's form, refused in a saved channel. */
  messageFields: readonly string[];
  /**
   * The message fields for one alert, merged over the channel's rendered `config`, which a field
   * may depend on; it may also fill a key the channel left out (a push's link opens the run)
   * but never replaces one the channel set.
   */
  fill(message: AlertText, config: Record<string, unknown>): Record<string, unknown>;
}

/**
 * `F`: what the plug-in tells about this install (`facts`), beside the catalog in GET /api/meta.
 */
export interface ActionPlugin<C = Record<string, unknown>, F extends object = object> {
  type: string;
  label: string;
  description: string;
  /**
   * Validates the stored (unrendered) config on save and the rendered config before `run`. Its
   * keys described with `field(…)` (lib/plugin) are the editor's form.
   */
  configSchema: z.ZodType<C>;
  /** A config that parses and that `run` can send (to a mocked provider), for the plug-in contract test and as documentation. */
  exampleConfig: Record<string, unknown>;
  /**
   * Config keys holding a URL the action calls that is checked on save (http or https, not a
   * private address unless ALLOW_PRIVATE_URLS); a templated value is checked once rendered.
   */
  urlFields?: readonly string[];
  /**
   * Top-level config keys that carry JSON values (a request body, spreadsheet cells, Block Kit
   * blocks): a string there that is exactly one `{{…}}` keeps its value's type (lib/template).
   */
  typedConfig?: readonly string[];
  /** Whether the action can run on this install (sheets needs GOOGLE_SERVICE_ACCOUNT_JSON); the editor hides it otherwise. */
  available?(ctx: Pick<PluginContext, "config">): boolean;
  /**
   * What GET /api/meta reports about this install for the plug-in, merged into its top level
   * (the notes folder a note's path preview starts from, the service account sheets are shared
   * with): keys in snake_case, unique across plug-ins (`actionFacts` throws on a key twice).
   */
  facts?(ctx: Pick<PluginContext, "config">): F;
  /** Throws `ActionError` (lib/core/errors) on failure, with `retryable` set as the spec says. */
  run(config: C, ctx: ActionContext): Promise<ActionResult>;
  /**
   * For a plug-in whose effect does not go through `ctx.http` (a file, SMTP, MQTT, a client
   * library): what `run` would do with this rendered config, built by the same code, doing none of
   * it (no write, no connection). The dry run (lib/executor/dry-run.ts) calls this instead of
   * `run`; a plug-in without it runs as usual with `ctx.http` recording its requests.
   */
  dryRun?(config: C, ctx: ActionContext): Promise<DryRunRecord>;
  /** Set when the action can carry failure alerts: it is then offered as an alert channel. */
  alert?: AlertChannelSpec;
  /** What the dry run answers this plug-in's requests with (its service's success), when the default `200 {}` would not read as success. */
  dryRunAnswer?(request: { method: string; url: string }): DryRunAnswer;
}
