"use client";
import { useEffect, useRef, useState } from "react";
import { api, errorBody } from "@/lib/ui/api-client";
import { pastEvents, type PastEvent } from "./api";

type State =
  | { kind: "idle" }
  | { kind: "listening"; until: number; url: string; baseline: Set<string> }
  | { kind: "captured"; at: string }
  | { kind: "timeout" }
  | { kind: "error"; message: string };

const POLL_MS = 1000;

/**
 * "Listen for test event" ( as n8n does): the applet's next real request to its webhook URL
 * (also while it is a disabled draft: the server keeps it as a sample and runs nothing) becomes the
 * sample. It polls the applet's recent events for one it had not seen, gives up after the
 * server's listening window (2 minutes), and can be cancelled.
 */
export function ListenForEvent({ appletId, onEvent }: { appletId: string; onEvent: (e: PastEvent) => void }) {
  const [state, setState] = useState<State>({ kind: "idle" });
  const onEventRef = useRef(onEvent);
  useEffect(() => {
    onEventRef.current = onEvent;
  });

  async function start() {
    setState({ kind: "idle" });
    const before = await pastEvents(appletId);
    if (!before.ok) return setState({ kind: "error", message: before.error });
    const res = await api.api.applets[":id"].listen.$post({ param: { id: appletId } }).catch(() => null);
    if (!res?.ok) return setState({ kind: "error", message: (res && (await errorBody(res)).error) ?? "could not reach the server; try again" });
    const { listening_until, webhook_url } = await res.json();
    setState({ kind: "listening", until: new Date(listening_until).getTime(), url: webhook_url, baseline: new Set(before.value.map((e) => e.id)) });
  }

  async function cancel() {
    setState({ kind: "idle" });
    await api.api.applets[":id"].listen.$delete({ param: { id: appletId } }).catch(() => null);
  }

  useEffect(() => {
    if (state.kind !== "listening") return;
    let live = true;
    const timer = setInterval(() => {
      if (Date.now() >= state.until) {
        setState({ kind: "timeout" });
        return;
      }
      void pastEvents(appletId).then((a) => {
        if (!live || !a.ok) return;
        // A real request (not a "Send test event", whose source is manual) this page had not seen.
        const fresh = a.value.find((e) => !state.baseline.has(e.id) && e.source !== "manual");
        if (!fresh) return;
        live = false;
        setState({ kind: "captured", at: fresh.received_at });
        onEventRef.current(fresh);
      });
    }, POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [state, appletId]);

  return (
    <div className="mt-3 flex flex-col gap-2 text-sm" data-testid="listen">
      {state.kind === "listening" ? (
        <div role="status" className="rounded-md bg-indigo-50 p-3 text-indigo-950 ring-1 ring-indigo-200">
          <p className="font-medium">Listening for a request to this applet&apos;s webhook URL…</p>
          <p className="mt-1 text-xs">
            Send one from the real sender, or: <span className="code break-all">curl -X POST &apos;{state.url}&apos; -H &apos;content-type: application/json&apos; -d &apos;{"{"}&quot;hello&quot;:&quot;world&quot;{"}"}&apos;</span>
          </p>
          <p className="mt-1 text-xs text-indigo-800">Gives up at {new Date(state.until).toLocaleTimeString()}. A disabled applet keeps the request as a sample and runs nothing.</p>
          <button type="button" className="btn-secondary mt-2" onClick={() => void cancel()}>
            Cancel
          </button>
        </div>
      ) : (
        <div className="flex flex-wrap items-center gap-2">
          <button type="button" className="btn-secondary" onClick={() => void start()}>
            Listen for test event
          </button>
          {state.kind === "captured" ? (
            <span role="status" className="text-green-800" data-testid="listen-result">
              Got a request ({new Date(state.at).toLocaleTimeString()}): it is the sample now.
            </span>
          ) : state.kind === "timeout" ? (
            <span role="status" className="text-amber-800" data-testid="listen-result">
              No request arrived in 2 minutes. Listen again when the sender is ready.
            </span>
          ) : state.kind === "error" ? (
            <span role="alert" className="text-red-700">
              {state.message}
            </span>
          ) : (
            <span className="text-xs text-slate-500">Waits for the next real request to the webhook URL and uses it as the sample.</span>
          )}
        </div>
      )}
    </div>
  );
}
