import type { Bus, BusMessage } from "../bus";
import type { HealthBanner } from "../health";

/** The `data:` of one GET /api/stream message (events run.queued and run.updated). */
export type StreamMessage = Pick<BusMessage, "run_id" | "applet_id" | "status">;

/** The `data:` of a `health` event: the banner, its worker age as of the moment it was sent. */
export type HealthMessage = HealthBanner;

/** The banner with the worker's age counted to `nowMs` (the bus keeps it as of its last change). */
export function healthAt(banner: HealthBanner, nowMs: number): HealthMessage {
  if (!banner.worker?.seenAt) return banner;
  return { ...banner, worker: { ...banner.worker, ageMs: Math.max(0, nowMs - Date.parse(banner.worker.seenAt)) } };
}

/**
 * GET /api/stream: server-sent events of run changes. A client that reconnects with
 * Last-Event-ID first gets what it missed (while the bus still holds it), then live messages.
 */
export function streamRuns(bus: Bus, req: Request, opts: { stillAllowed?: () => Promise<boolean> | boolean; pingMs?: number; nowMs?: () => number } = {}): Response {
  const nowMs = opts.nowMs ?? Date.now;
  const encoder = new TextEncoder();
  const lastId = Number(req.headers.get("last-event-id") ?? new URL(req.url).searchParams.get("last_event_id") ?? NaN);
  let cleanup = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (m: BusMessage) => {
        const message: StreamMessage = { run_id: m.run_id, applet_id: m.applet_id, status: m.status };
        const data = JSON.stringify(message);
        try {
          controller.enqueue(encoder.encode(`id: ${m.seq}\nevent: ${m.type}\ndata: ${data}\n\n`));
        } catch {
          cleanup();
        }
      };
      // Health events carry no id: Last-Event-ID stays the runs' sequence. The current banner goes
      // first, so a page (re)connecting is right at once.
      const sendHealth = (banner: HealthBanner) => {
        try {
          controller.enqueue(encoder.encode(`event: health\ndata: ${JSON.stringify(healthAt(banner, nowMs()))}\n\n`));
        } catch {
          cleanup();
        }
      };
      controller.enqueue(encoder.encode("retry: 3000\n: connected\n\n"));
      const current = bus.health();
      if (current) sendHealth(current);
      if (Number.isFinite(lastId)) bus.since(lastId).forEach(send);
      const unsubscribeRuns = bus.subscribe(send);
      const unsubscribeHealth = bus.subscribeHealth(sendHealth);
      const unsubscribe = () => {
        unsubscribeRuns();
        unsubscribeHealth();
      };
      // A comment every 15 s keeps proxies from closing an idle stream; the session is checked again
      // then too, so a stream opened before a logout ends within one interval.
      const ping = async () => {
        try {
          if (opts.stillAllowed && !(await opts.stillAllowed())) {
            cleanup();
            controller.close();
            return;
          }
          controller.enqueue(encoder.encode(": ping\n\n"));
        } catch {
          cleanup();
        }
      };
      // ping() catches everything itself: nothing to await.
      const pinger = setInterval(() => void ping(), opts.pingMs ?? 15_000);
      cleanup = () => {
        clearInterval(pinger);
        unsubscribe();
      };
      req.signal.addEventListener("abort", () => {
        cleanup();
        try {
          controller.close();
        } catch {
          // already closed
        }
      });
    },
    cancel() {
      cleanup();
    },
  });
  return new Response(body, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache, no-transform", connection: "keep-alive", "x-accel-buffering": "no" },
  });
}
