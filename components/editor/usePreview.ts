"use client";
import { useCallback, useEffect, useRef, useState } from "react";
import type { Problem } from "@/lib/ui/types";
import { previewApplet, type PreviewAction, type PreviewRequest } from "./api";

export interface PreviewState {
  actions: PreviewAction[];
  /** The action configs that were rendered, to mark unresolved expressions in their templates. */
  templates: Record<string, unknown>[];
  problems: Problem[];
}

export interface Preview {
  preview: PreviewState | null;
  busy: boolean;
  error: string | null;
  /** Whether the preview follows every edit: once asked for, or while `auto` holds. */
  following: boolean;
  /** "Preview": render now, and follow every edit from then on. */
  run(): void;
  /** Forget what is shown (another trigger: another sample). */
  reset(): void;
}

/** How long typing must pause before the preview follows it. */
const DEBOUNCE_MS = 400;

/**
 * The applet rendered against the trigger's sample (POST /api/applets/preview). Once asked for, or
 * while `auto` holds (a field whose panel needs the rendered config, such as a note's path), it
 * follows every edit, debounced; a request made stale by a newer one is aborted, so an old answer
 * never overwrites a newer one.
 */
export function usePreview(request: PreviewRequest | null, auto: boolean): Preview {
  // The request as sent: a string, so an effect sees a change of content, not of identity.
  const body = request ? JSON.stringify(request) : null;
  const [wanted, setWanted] = useState(false);
  const [preview, setPreview] = useState<PreviewState | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const inFlight = useRef<AbortController | null>(null);
  /** The body of the latest request, so the debounce does not repeat what "Preview" just sent. */
  const lastSent = useRef<string | null>(null);
  const following = wanted || auto;

  const send = useCallback(async (sent: string) => {
    inFlight.current?.abort();
    const controller = new AbortController();
    inFlight.current = controller;
    lastSent.current = sent;
    setBusy(true);
    const answer = await previewApplet(sent, controller.signal);
    // Aborted: a newer request (or a reset) is in charge of the state now.
    if (answer === null) return;
    inFlight.current = null;
    setBusy(false);
    if (!answer.ok) {
      setError(answer.error);
      return;
    }
    setError(null);
    const { definition } = JSON.parse(sent) as PreviewRequest;
    setPreview({ actions: answer.value.actions, templates: definition.actions.map((a) => a.config), problems: answer.value.problems });
  }, []);

  useEffect(() => {
    if (!following || body === null) return;
    const timer = setTimeout(() => {
      if (body !== lastSent.current) void send(body);
    }, DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [body, following, send]);

  // Leaving the editor abandons the request in flight.
  useEffect(() => () => inFlight.current?.abort(), []);

  const run = useCallback(() => {
    setWanted(true);
    if (body !== null) void send(body);
  }, [body, send]);

  const reset = useCallback(() => {
    inFlight.current?.abort();
    inFlight.current = null;
    lastSent.current = null;
    setBusy(false);
    setPreview(null);
  }, []);

  return { preview, busy, error, following, run, reset };
}
