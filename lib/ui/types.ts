import type { FieldMeta } from "@/lib/plugin";
import type { Step } from "@/lib/executor/types";

/**
 * Shapes the screens read: the JSON API's responses (lib/api/router.ts) as the browser sees them.
 * Type-only imports keep this file free of server code, so client components can use it.
 */
export type { FieldMeta, Step };

export interface MetaTrigger {
  type: string;
  label: string;
  description: string;
  fields: FieldMeta[];
  ingredients: { name: string; description: string }[];
  sample: Record<string, unknown>;
  can_fetch: boolean;
}

export interface MetaAction {
  type: string;
  label: string;
  description: string;
  fields: FieldMeta[];
  available: boolean;
}

export interface Meta {
  public_url: string;
  inbound_domain: string;
  smtp_inbound_port: number;
  notes_root: string;
  google_service_account_email: string | null;
  ai_configured: boolean;
  triggers: MetaTrigger[];
  actions: MetaAction[];
}

export interface PluginConfig {
  type: string;
  config: Record<string, unknown>;
}

/** lib/definition.ts `Definition`, as it travels as JSON. */
export interface DefinitionJson {
  version: 1;
  trigger: PluginConfig;
  filter?: { code: string };
  transform?: { model: string; prompt: string; output: string; json: boolean };
  actions: PluginConfig[];
  retry?: { max_attempts: number };
  timezone?: string;
}

export interface Problem {
  path: string;
  message: string;
}

export type RunStatus = "queued" | "running" | "succeeded" | "failed" | "skipped" | "dead";

/** One row of GET /api/runs. */
export interface RunRow {
  id: string;
  applet_id: string;
  applet_name: string | null;
  event_id: string;
  status: RunStatus;
  attempt: number;
  max_attempts: number;
  next_attempt_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** GET /api/runs/:id. */
export interface RunDetail {
  run: RunRow & { steps: Step[] };
  event: { id: string; applet_id: string; source: string; dedupe_key: string | null; payload: Record<string, unknown>; received_at: string } | null;
  applet: { id: string; name: string } | null;
}

/** GET /api/applets/:id. */
export interface AppletDetail {
  id: string;
  name: string;
  enabled: boolean;
  trigger_type: string;
  action_types: string[];
  last_fired_at: string | null;
  run_count: number;
  created_at: string;
  updated_at: string;
  definition: DefinitionJson;
  webhook_token: string;
  webhook_url: string;
  trigger_state: {
    next_run_at: string | null;
    last_polled_at: string | null;
    last_error: string | null;
    error_count: number;
    seen_keys: number;
    last_value: unknown;
  } | null;
}

/** A message of GET /api/stream. */
export interface StreamMessage {
  run_id: string;
  applet_id: string;
  status: RunStatus;
}

export const TERMINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "skipped", "dead"];
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "running", "succeeded", "failed", "skipped", "dead"];
