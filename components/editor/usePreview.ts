"use client";
import { useEffect, useState } from "react";
import type { Problem } from "@/lib/definition";
import { looseActions } from "@/lib/definition/loose";
import { previewApplet, type PreviewAction, type PreviewRequest, type PreviewStepEntry } from "./api";
import { createPreviewRunner } from "./previewRunner";

export interface PreviewState {
  actions: PreviewAction[];
  /** The action configs that were rendered, to mark unresolved expressions in their templates. */
  templates: Record<string, unknown>[];
  /** A step list's walk: the way each if and paths goes, each for_each's first items (empty for a simple applet). */
  steps: PreviewStepEntry[];
  problems: Problem[];
}

export interface Preview {
  preview: PreviewState | null;
  busy: boolean;
  error: string | null;
  /** Whether the preview follows every edit: once asked for, or while `auto` holds. */
  following: boolean;
  /** "Preview": render now, and follow every edit from then on. */
  run: () => void;
  /** Forget what is shown (another trigger: another sample). */
  reset: () => void;
}

/** How long typing must pause before the preview follows it. */
const DEBOUNCE_MS = 400;

/**
 * The applet rendered against the trigger's sample (POST /api/applets/preview). Once asked for, or
 * while `auto` holds (a field whose panel needs the rendered config, such as a note's path), it
 * follows every edit, debounced; a request made stale by a newer one is aborted (./previewRunner).
 */
export function usePreview(request: PreviewRequest | null, auto: boolean): Preview {
  // The request as sent: a string, so the effect sees a change of content, not of identity.
  const body = request ? JSON.stringify(request) : null;
  const [wanted, setWanted] = useState(false);
  const [preview, setPreview] = useState<PreviewState | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [runner] = useState(() =>
    createPreviewRunner({
      delayMs: DEBOUNCE_MS,
      request: previewApplet,
      onStart: () => setBusy(true),
      onAnswer: (sent, answer) => {
        setBusy(false);
        if (!answer.ok) return setError(answer.error);
        setError(null);
        const { definition } = JSON.parse(sent) as PreviewRequest;
        setPreview({ actions: answer.value.actions, templates: looseActions(definition).map((a) => a.config), steps: answer.value.steps, problems: answer.value.problems });
      },
    }),
  );
  const following = wanted || auto;

  useEffect(() => {
    if (!following || body === null) return;
    runner.schedule(body);
    return runner.unschedule;
  }, [body, following, runner]);

  // Leaving the editor abandons the request in flight.
  useEffect(() => runner.cancel, [runner]);

  return {
    preview,
    busy,
    error,
    following,
    run() {
      setWanted(true);
      if (body !== null) runner.now(body);
    },
    reset() {
      runner.cancel();
      setBusy(false);
      setPreview(null);
    },
  };
}
