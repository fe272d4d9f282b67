import type { AlertChannel, AppletAlertChannel, AppletAlertState } from "./types/alerts";
import type { AlertRow } from "./types";

/** One alert-row and channel mapper for both engines (as run-row.ts is for runs). */
export interface AlertRaw {
  id: string;
  applet_id: string | null;
  applet_name: string | null;
  kind: string;
  run_id: string | null;
  error: string | null;
  detail: string | null;
  status: string;
  folded_into: string | null;
  message: string | null;
  channel_type: string | null;
  provider_answer: string | null;
  locked_until: string | null;
  dispatched_at: string | null;
  sent_at: string | null;
  created_at: string;
}

const parseObject = (text: string | null): Record<string, unknown> => {
  if (!text) return {};
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
};

export const toAlertRow = (r: AlertRaw): AlertRow => ({
  id: r.id,
  appletId: r.applet_id,
  appletName: r.applet_name,
  kind: r.kind as AlertRow["kind"],
  runId: r.run_id,
  error: r.error,
  detail: typeof r.detail === "object" && r.detail !== null ? (r.detail) : parseObject(r.detail),
  status: r.status as AlertRow["status"],
  foldedInto: r.folded_into,
  message: r.message,
  channelType: r.channel_type,
  providerAnswer: r.provider_answer,
  lockedUntil: r.locked_until,
  dispatchedAt: r.dispatched_at,
  sentAt: r.sent_at,
  createdAt: r.created_at,
});

/** A stored applet channel (JSON text or null) as the policy reads it; anything unreadable follows Settings. */
export function readAppletChannel(value: unknown): AppletAlertChannel {
  const v = typeof value === "string" ? parseObject(value) : value;
  if (!v || typeof v !== "object") return null;
  const o = v as Record<string, unknown>;
  if (o.mode === "none") return { mode: "none" };
  if (typeof o.type === "string" && o.config && typeof o.config === "object") return { type: o.type, config: o.config as Record<string, unknown> };
  return null;
}

export function readChannel(value: unknown): AlertChannel | null {
  const c = readAppletChannel(value);
  return c && !("mode" in c) ? c : null;
}


/** The applet columns the store's alert policy reads (AppletAlertState), as both engines hand them back. */
export interface AppletAlertStateRaw {
  name: string;
  enabled: number;
  failure_streak: number;
  alert_open: number;
  trigger_alert_open: number;
  alert_channel: unknown;
  auto_pause: number | null;
}

export const toAppletAlertState = (r: AppletAlertStateRaw): AppletAlertState => ({
  name: r.name,
  enabled: r.enabled === 1,
  failureStreak: r.failure_streak,
  alertOpen: r.alert_open === 1,
  triggerAlertOpen: r.trigger_alert_open === 1,
  alertChannel: readAppletChannel(r.alert_channel),
  autoPause: r.auto_pause === null ? null : r.auto_pause === 1,
});
