"use client";
import { useEffect, useRef } from "react";
import type { HealthMessage, StreamMessage } from "@/lib/api/stream";

/**
 * One EventSource on GET /api/stream per tab, shared by everything on the page that listens (the
 * page's live runs and the health banner of the layout): a browser allows few connections per
 * host over HTTP/1.1, and two streams per tab would use them up after three tabs.
 */
interface Listener {
  onEvent(type: string, data: string): void;
  onOpen(): void;
  onError(): void;
}

const EVENTS = ["run.queued", "run.updated", "health"] as const;
const listeners = new Set<Listener>();
let source: EventSource | null = null;

function join(l: Listener): () => void {
  listeners.add(l);
  if (!source) {
    const s = new EventSource("/api/stream");
    source = s;
    for (const type of EVENTS) s.addEventListener(type, (e: MessageEvent<string>) => listeners.forEach((x) => x.onEvent(type, e.data)));
    s.onopen = () => listeners.forEach((x) => x.onOpen());
    s.onerror = () => listeners.forEach((x) => x.onError());
  } else if (source.readyState === EventSource.OPEN) l.onOpen();
  return () => {
    listeners.delete(l);
    if (listeners.size === 0 && source) {
      source.close();
      source = null;
    }
  };
}

/**
 * Subscribes to GET /api/stream (run.queued, run.updated). While the stream is down (server
 * restart, proxy cut, a 401) `onFallback` runs every `fallbackMs` so the screen keeps moving; when
 * the stream (re)opens, `onOpen` runs once so anything missed while connecting is picked up.
 */
export function useRunStream(handlers: { onMessage(m: StreamMessage): void; onOpen?(): void; onFallback?(): void }, fallbackMs = 5000): void {
  const ref = useRef(handlers);
  useEffect(() => {
    ref.current = handlers;
  });

  useEffect(() => {
    let timer: ReturnType<typeof setInterval> | null = null;
    const stopFallback = () => {
      if (timer) clearInterval(timer);
      timer = null;
    };
    const leave = join({
      onEvent(type, data) {
        if (type !== "run.queued" && type !== "run.updated") return;
        try {
          ref.current.onMessage(JSON.parse(data) as StreamMessage);
        } catch {
          // A malformed message is ignored; the next one or the fallback brings the screen up to date.
        }
      },
      onOpen() {
        stopFallback();
        ref.current.onOpen?.();
      },
      onError() {
        if (!timer) timer = setInterval(() => ref.current.onFallback?.(), fallbackMs);
      },
    });
    return () => {
      stopFallback();
      leave();
    };
  }, [fallbackMs]);
}

/** Calls `onHealth` with every `health` event of the stream (the banner; the current one first on each (re)connect). */
export function useHealthStream(onHealth: (m: HealthMessage) => void): void {
  const ref = useRef(onHealth);
  useEffect(() => {
    ref.current = onHealth;
  });
  useEffect(
    () =>
      join({
        onEvent(type, data) {
          if (type !== "health") return;
          try {
            ref.current(JSON.parse(data) as HealthMessage);
          } catch {
            // Ignored: the next change sends it again.
          }
        },
        onOpen() {},
        onError() {},
      }),
    [],
  );
}
