import type { Bus, BusMessage } from "../bus";

/** The `data:` of one GET /api/stream message (events run.queued and run.updated). */
export type StreamMessage = Pick<BusMessage, "run_id" | "applet_id" | "status">;

/**
 * GET /api/stream: server-sent events of run changes. A client that reconnects with
 * Last-Event-ID first gets what it missed (while the bus still holds it), then live messages.
 */
export function streamRuns(bus: Bus, req: Request, opts: { stillAllowed?: () => Promise<boolean> | boolean; pingMs?: number } = {}): Response {
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
      controller.enqueue(encoder.encode("retry: 3000\n: connected\n\n"));
      if (Number.isFinite(lastId)) bus.since(lastId).forEach(send);
      const unsubscribe = bus.subscribe(send);
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
