/**
 * "Listen for test event" ( as n8n does): while the editor listens to a webhook applet, its
 * next request is kept as a sample even when the applet is disabled (a draft): the ingress stores
 * it as an event with a skipped run (nothing runs), and the editor, polling the applet's recent
 * events, picks it up. An enabled applet's request is ingested as always; listening only makes the
 * editor wait for it.
 *
 * The flag is the applet row's listen_until (store.applets.setListening), read by the webhook with
 * the rest of its row, so the editor's request and the sender's may reach different web processes.
 * It ends after LISTEN_MS or with the first captured request (store.applets.takeListening, which
 * exactly one request wins), whichever comes first.
 */
export const LISTEN_MS = 2 * 60_000;

/** Whether a request at `now` to an applet whose row says `listenUntil` is to be captured. */
export const isListening = (listenUntil: string | null, now: Date): boolean => listenUntil !== null && listenUntil > now.toISOString();
