import { readAppletChannel } from "./alert-row";
import { readJson, type JsonColumns } from "./json";
import type { Applet, AppletVersion, HookApplet, VersionSource } from "./types";

// One applet and version mapper for both engines (as run-row.ts is for runs).

/** The applet's current version, read in the same statement as its row. */
export const APPLET_COLUMNS = "applets.*, (SELECT MAX(v.version) FROM applet_versions v WHERE v.applet_id = applets.id) AS version";

/** An `applets` row with its current version (APPLET_COLUMNS); JSON columns as the engine hands them back (JsonColumns). */
export interface AppletRaw {
  id: string;
  name: string;
  enabled: number;
  trigger_type: string;
  definition: unknown;
  webhook_token: string;
  last_fired_at: string | null;
  run_count: number;
  tags: unknown;
  failure_streak: number;
  alert_open: number;
  trigger_alert_open: number;
  alert_channel: unknown;
  auto_pause: number | null;
  paused_reason: string | null;
  paused_at: string | null;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
  version: number | null;
}

/** An `applet_versions` row. */
export interface VersionRaw {
  applet_id: string;
  version: number;
  name: string;
  enabled: number;
  definition: unknown;
  source: string;
  restored_from: number | null;
  author_type: string;
  author_id: string | null;
  author_label: string;
  created_at: string;
}

/** A definition: stored text is read with readJson (a row that is not JSON throws an error that names it). */
const definitionOf = (value: unknown, json: JsonColumns, what: string): Record<string, unknown> =>
  json === "text" ? readJson<Record<string, unknown>>(value as string, what) : (value as Record<string, unknown>);

/** A tags column that is not a JSON array of text (written by hand) reads as no tags: it must not make the applet unreadable. */
function readTags(value: unknown, json: JsonColumns): string[] {
  let v = value;
  if (json === "text") {
    try {
      v = JSON.parse(value as string) as unknown;
    } catch {
      return [];
    }
  }
  return Array.isArray(v) ? (v as unknown[]).filter((t): t is string => typeof t === "string") : [];
}

export const toVersion = (r: VersionRaw, json: JsonColumns): AppletVersion => ({
  appletId: r.applet_id,
  version: r.version,
  name: r.name,
  enabled: r.enabled === 1,
  definition: definitionOf(r.definition, json, `the stored definition of version ${r.version} of applet ${r.applet_id}`),
  source: r.source as VersionSource,
  restoredFrom: r.restored_from,
  author: { kind: r.author_type as AppletVersion["author"]["kind"], id: r.author_id, label: r.author_label },
  createdAt: r.created_at,
});

export const toApplet = (r: AppletRaw, json: JsonColumns): Applet => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled === 1,
  triggerType: r.trigger_type,
  definition: definitionOf(r.definition, json, `the stored definition of applet ${r.id}`),
  webhookToken: r.webhook_token,
  lastFiredAt: r.last_fired_at,
  runCount: r.run_count,
  tags: readTags(r.tags, json),
  failureStreak: r.failure_streak,
  alertOpen: r.alert_open === 1,
  triggerAlertOpen: r.trigger_alert_open === 1,
  alertChannel: readAppletChannel(r.alert_channel),
  autoPause: r.auto_pause === null ? null : r.auto_pause === 1,
  pausedReason: r.paused_reason,
  pausedAt: r.paused_at,
  disabledAt: r.disabled_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  version: r.version ?? 0,
});

/** The hook columns of an applet (forHook), the definition as text on both engines. */
export interface HookAppletRaw {
  id: string;
  enabled: number;
  webhook_token: string;
  definition: string;
  listen_until: string | null;
}

export const toHookApplet = (r: HookAppletRaw): HookApplet => ({ id: r.id, enabled: r.enabled === 1, webhookToken: r.webhook_token, definition: r.definition, listenUntil: r.listen_until });
