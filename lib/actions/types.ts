import type { z } from "zod";
import type { FieldMeta, PluginContext } from "../plugin";

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
}

export interface ActionResult {
  output: unknown;
}

export interface ActionPlugin<C = Record<string, unknown>> {
  type: string;
  label: string;
  description: string;
  /** Validates the stored (unrendered) config on save and the rendered config before `run`. */
  configSchema: z.ZodType<C>;
  fields: FieldMeta[];
  /**
   * Top-level config keys that carry JSON values (a request body, spreadsheet cells, Block Kit
   * blocks): a string there that is exactly one `{{…}}` keeps its value's type (lib/template).
   */
  typedConfig?: readonly string[];
  /** Whether the action can run on this install (sheets needs GOOGLE_SERVICE_ACCOUNT_JSON); the editor hides it otherwise. */
  available?(ctx: Pick<PluginContext, "config">): boolean;
  /** Throws `ActionError` (lib/core/errors) on failure, with `retryable` set as the spec says. */
  run(config: C, ctx: ActionContext): Promise<ActionResult>;
}
