import type { App } from "../app";
import { errorMessage } from "../core/errors";
import { processMetrics } from "../metrics";
import type { AlertRow } from "../db/store/types";
import { composeMessage, type AlertMessage } from "./message";
import { storedDefinition, timezoneOf } from "../definition";
import { channelFor, type AlertSettings } from "./policy";
import { sendThroughChannel } from "./send";

type DispatchApp = Pick<App, "store" | "config" | "clock" | "http" | "log" | "secrets">;

/** How long a send may take before another dispatcher takes it for one whose worker died. */
export const SEND_LOCK_MS = 120_000;
const LOCK_TTL_MS = 300_000;

export interface DispatchSummary {
  sent: string[];
  failed: string[];
  /** Alerts folded into a message sent now. */
  folded: number;
  /** Applets whose alerts wait for their window to end. */
  waiting: number;
}

/**
 * The worker's alert dispatcher, one pass under the `alerts` job lock (one worker at a
 * time). First the sends a crashed worker left `sending` (their lock ran out): sent again with the
 * stored message and the same idempotency key. Then the pending alerts, grouped per applet: an
 * applet messaged less than the window ago waits; otherwise every pending alert of it becomes one
 * message (the newest, with the others folded into it: "…and 37 more"). A send that fails is
 * marked failed with the provider's answer (redacted) and logged; it never records an alert of its own.
 */
export async function dispatchAlerts(app: DispatchApp, opts: { holder: string }): Promise<DispatchSummary | null> {
  const { store, clock } = app;
  const log = app.log.child("alerts");
  if (!(await store.jobLocks.take("alerts", opts.holder, clock.now(), LOCK_TTL_MS))) return null;
  const summary: DispatchSummary = { sent: [], failed: [], folded: 0, waiting: 0 };
  try {
    const settings = await store.alerts.settings();
    for (const row of await store.alerts.stale(clock.now().toISOString())) {
      const now = clock.now();
      if (!(await store.alerts.relock(row.id, row.lockedUntil, new Date(now.getTime() + SEND_LOCK_MS).toISOString(), now.toISOString()))) continue;
      const message = row.message ? parseStored(row.message) : composeMessage([row], app.config.publicUrl, await zoneOf(row));
      await send(row, message, settings);
    }
    const groups = new Map<string, AlertRow[]>();
    for (const row of await store.alerts.pending(1000)) {
      const key = row.appletId ?? `test:${row.id}`;
      const list = groups.get(key) ?? [];
      list.push(row);
      groups.set(key, list);
    }
    const windowMs = settings.windowMinutes * 60_000;
    for (const batch of groups.values()) {
      const main = batch[batch.length - 1]!;
      const now = clock.now();
      const channel = await channelOf(main, settings);
      if (!channel) {
        await store.alerts.skip(
          batch.map((a) => a.id),
          "no alert channel: set one in Settings (or for this applet)",
          now.toISOString(),
        );
        continue;
      }
      if (main.appletId) {
        const last = await store.alerts.lastDispatchedAt(main.appletId);
        if (last && now.getTime() - new Date(last).getTime() < windowMs) {
          summary.waiting++;
          continue;
        }
      }
      const message = composeMessage(batch, app.config.publicUrl, await zoneOf(main));
      const folded = batch.slice(0, -1).map((a) => a.id);
      if (!(await store.alerts.beginSend(main.id, folded, JSON.stringify(message), channel.type, now.toISOString(), new Date(now.getTime() + SEND_LOCK_MS).toISOString()))) continue;
      summary.folded += folded.length;
      await send(main, message, settings);
    }
  } finally {
    await store.jobLocks.release("alerts", opts.holder, clock.now()).catch(() => undefined);
  }
  return summary;

  // The times in an alert read in the applet's zone (the one its schedule and templates use), named.
  async function zoneOf(row: AlertRow): Promise<string> {
    const applet = row.appletId ? await store.applets.get(row.appletId) : null;
    return applet ? timezoneOf(storedDefinition(applet.definition)) : "UTC";
  }

  async function channelOf(row: AlertRow, settings: AlertSettings) {
    if (!row.appletId) return settings.channel;
    const applet = await store.applets.get(row.appletId);
    return applet ? channelFor(applet.alertChannel, settings) : null;
  }

  async function send(row: AlertRow, message: AlertMessage, settings: AlertSettings): Promise<void> {
    const channel = await channelOf(row, settings);
    const done = clock.now().toISOString();
    if (!channel) {
      await store.alerts.markFailed(row.id, "no alert channel any more: set one in Settings (or for this applet)", done);
      summary.failed.push(row.id);
      processMetrics().alertSends.inc({ outcome: "failed" });
      return;
    }
    try {
      await sendThroughChannel(app, channel, message, row);
      await store.alerts.markSent(row.id, clock.now().toISOString());
      summary.sent.push(row.id);
      processMetrics().alertSends.inc({ outcome: "sent" });
    } catch (err) {
      const answer = errorMessage(err);
      log.warn("an alert could not be sent", { alert_id: row.id, applet_id: row.appletId, channel: channel.type, error: answer });
      await store.alerts.markFailed(row.id, answer, clock.now().toISOString());
      summary.failed.push(row.id);
      processMetrics().alertSends.inc({ outcome: "failed" });
    }
  }
}

function parseStored(text: string): AlertMessage {
  try {
    const m = JSON.parse(text) as Partial<AlertMessage>;
    if (typeof m.title === "string" && typeof m.text === "string" && typeof m.link === "string") return { title: m.title, text: m.text, link: m.link };
  } catch {
    // fall through
  }
  return { title: "whenthen alert", text: text, link: "" };
}
