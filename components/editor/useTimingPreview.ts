"use client";
import { useEffect, useState } from "react";
import { looseSteps } from "@/lib/definition/loose";
import type { EditorDefinition as Definition } from "./draft";
import { previewTiming, type TimingPreviewItem } from "./api";
import { createPreviewRunner } from "./previewRunner";

export interface TimingPreview {
  /** One per timed action, from the latest answer; null before the first. */
  items: TimingPreviewItem[] | null;
  /** What the planner said about the sample as a whole (a subject id that rendered empty). */
  warnings: string[];
  busy: boolean;
  error: string | null;
}

const DEBOUNCE_MS = 400;

/**
 * When each timed action would run for the sample (POST /api/applets/timing-preview): while
 * any action has a timing, every edit of the definition or the sample is planned again once
 * typing pauses; a request made stale by a newer one is aborted (./previewRunner).
 */
export function useTimingPreview(definition: Definition | null, sample: Record<string, unknown>): TimingPreview {
  const timed = definition ? looseSteps(definition).some((s) => s.step.timing !== undefined) : false;
  const body = definition && timed ? JSON.stringify({ definition, sample }) : null;
  const [items, setItems] = useState<TimingPreviewItem[] | null>(null);
  const [warnings, setWarnings] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [runner] = useState(() =>
    createPreviewRunner({
      delayMs: DEBOUNCE_MS,
      request: previewTiming,
      onStart: () => setBusy(true),
      onAnswer: (_sent, answer) => {
        setBusy(false);
        if (!answer.ok) return setError(answer.error);
        setError(null);
        setItems(answer.value.items);
        // An action's own warning (no anchor) is its explanation, shown on its card.
        setWarnings(answer.value.warnings.filter((w) => !/^action \d+ /.test(w)));
      },
    }),
  );

  useEffect(() => {
    if (body === null) return;
    runner.schedule(body);
    return runner.unschedule;
  }, [body, runner]);

  useEffect(() => runner.cancel, [runner]);

  return { items: body === null ? null : items, warnings: body === null ? [] : warnings, busy: body !== null && busy, error: body === null ? null : error };
}
