/**
 * "Listen for test event" (#20, as n8n does): while the editor listens to a webhook applet, its
 * next request is kept as a sample even when the applet is disabled (a draft): the ingress stores
 * it as an event with a skipped run (nothing runs), and the editor, polling the applet's recent
 * events, picks it up. An enabled applet's request is ingested as always; listening only makes the
 * editor wait for it.
 *
 * The listening flag lives in the web process (the ingress and the API share it): a deployment
 * with several web processes behind one address captures only on the process the editor asked.
 * A flag expires after LISTEN_MS or with the first captured request, whichever comes first.
 */
export const LISTEN_MS = 2 * 60_000;

export interface Listeners {
  /** Starts (or restarts) listening; returns when it ends. */
  start(appletId: string, now: Date): string;
  stop(appletId: string): void;
  /** Whether a request to this applet now is to be captured. */
  listening(appletId: string, now: Date): boolean;
  /** The first captured request ends the listening. */
  captured(appletId: string): void;
}

export function createListeners(): Listeners {
  const until = new Map<string, number>();
  return {
    start(appletId, now) {
      // A bound on the map: an editor that never stops listening cannot grow it without end.
      if (until.size > 1000) for (const [id, t] of until) if (t <= now.getTime()) until.delete(id);
      const end = now.getTime() + LISTEN_MS;
      until.set(appletId, end);
      return new Date(end).toISOString();
    },
    stop: (appletId) => void until.delete(appletId),
    listening(appletId, now) {
      const t = until.get(appletId);
      if (t === undefined) return false;
      if (t > now.getTime()) return true;
      until.delete(appletId);
      return false;
    },
    captured: (appletId) => void until.delete(appletId),
  };
}

// One registry per app (the web process's ingress and API are handed the same bus).
const byApp = new WeakMap<object, Listeners>();

/** The registry of this app's process; `key` is the app's bus, which the ingress and the API share. */
export function listenersOf(key: object): Listeners {
  let l = byApp.get(key);
  if (!l) byApp.set(key, (l = createListeners()));
  return l;
}
