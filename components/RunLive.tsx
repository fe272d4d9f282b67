"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { useRunStream } from "@/lib/ui/stream";
import type { ShownRunStatus } from "@/lib/ui/run-status";
import { TERMINAL_STATUSES } from "@/lib/ui/run-status";

/**
 * Keeps a server-rendered run page current: a stream message about this run re-renders the page
 * (router.refresh keeps scroll and client state). On (re)connect it refreshes once, for what
 * happened before the stream was open; while the stream is down it refreshes every 5 s until the
 * run has finished.
 */
export function RunLive({ runId, status }: { runId: string; status: ShownRunStatus }) {
  const router = useRouter();
  const [mode, setMode] = useState<"connecting" | "live" | "polling">("connecting");
  useRunStream({
    onMessage(m) {
      if (m.run_id === runId) router.refresh();
    },
    onOpen() {
      setMode("live");
      router.refresh();
    },
    onFallback() {
      setMode("polling");
      if (!(TERMINAL_STATUSES as readonly string[]).includes(status)) router.refresh();
    },
  });
  return (
    <span className="inline-flex items-center gap-1.5 text-xs text-slate-500" aria-live="polite">
      <span className={`inline-block h-2 w-2 rounded-full ${mode === "live" ? "bg-green-500" : mode === "polling" ? "bg-amber-500" : "bg-slate-300"}`} />
      {mode === "live" ? "Live" : mode === "polling" ? "Refreshing every 5 s" : "Connecting…"}
    </span>
  );
}
