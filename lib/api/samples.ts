import type { App } from "../app";

/** How many past events the editor's sample picker offers. */
export const SAMPLE_EVENTS = 20;

/**
 * GET /api/applets/:id/events: the applet's last events, for the editor to test against what
 * really arrived. Payloads as stored (the run page shows them the same way).
 */
export async function recentEvents(app: Pick<App, "store">, appletId: string): Promise<{ id: string; source: string; received_at: string; payload: Record<string, unknown> }[]> {
  return (await app.store.runs.recentEvents(appletId, SAMPLE_EVENTS)).map((e) => ({ id: e.id, source: e.source, received_at: e.receivedAt, payload: e.payload }));
}
