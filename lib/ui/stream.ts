"use client";
import { useEffect, useRef } from "react";
import type { StreamMessage } from "@/lib/api/stream";

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
    const startFallback = () => {
      if (!timer) timer = setInterval(() => ref.current.onFallback?.(), fallbackMs);
    };
    const stopFallback = () => {
      if (timer) clearInterval(timer);
      timer = null;
    };
    const source = new EventSource("/api/stream");
    const onMessage = (e: MessageEvent<string>) => {
      try {
        ref.current.onMessage(JSON.parse(e.data) as StreamMessage);
      } catch {
        // A malformed message is ignored; the next one or the fallback brings the screen up to date.
      }
    };
    source.addEventListener("run.queued", onMessage);
    source.addEventListener("run.updated", onMessage);
    source.onopen = () => {
      stopFallback();
      ref.current.onOpen?.();
    };
    source.onerror = () => startFallback();
    return () => {
      stopFallback();
      source.close();
    };
  }, [fallbackMs]);
}
