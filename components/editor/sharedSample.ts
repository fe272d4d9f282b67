"use client";
import { useState, useSyncExternalStore } from "react";
import { builtinChoice, type SampleChoice } from "./SamplePicker";

/**
 * The sample a saved applet is tested with, shared by everything on its page that uses one: the
 * editor (its preview, ingredient picker and timing), "Send test event" and the webhook's curl
 * line. Edited, fetched or picked in one place, the others follow. Kept per applet in the tab's
 * sessionStorage, so a reload keeps it; the built-in sample is stored as nothing. A sample made
 * for another trigger type (the editor's trigger changed but not saved yet) does not count for
 * the saved one.
 */

interface Stored {
  triggerType: string;
  choice: SampleChoice;
}

const PREFIX = "whenthen:sample:";
const listeners = new Set<() => void>();
// The tab's own copy: sessionStorage may be unavailable (a private window's quota, a sandbox).
const memory = new Map<string, string | null>();

function readRaw(appletId: string): string | null {
  if (memory.has(appletId)) return memory.get(appletId) ?? null;
  try {
    return window.sessionStorage.getItem(PREFIX + appletId);
  } catch {
    return null;
  }
}

function write(appletId: string, value: Stored | null) {
  const raw = value ? JSON.stringify(value) : null;
  memory.set(appletId, raw);
  try {
    if (raw) window.sessionStorage.setItem(PREFIX + appletId, raw);
    else window.sessionStorage.removeItem(PREFIX + appletId);
  } catch {
    // The in-memory copy still serves this page.
  }
  for (const l of listeners) l();
}

function subscribe(onChange: () => void) {
  listeners.add(onChange);
  return () => listeners.delete(onChange);
}

function parseStored(raw: string | null, triggerType: string): SampleChoice | null {
  if (!raw) return null;
  try {
    const s = JSON.parse(raw) as Stored;
    return s.triggerType === triggerType && typeof s.choice?.text === "string" && typeof s.choice.source === "string" ? s.choice : null;
  } catch {
    return null;
  }
}

/**
 * The sample choice of `scope`'s applet and its setter; a new applet (no scope yet) keeps its own
 * in the component. The server and the first render in the browser use the built-in sample (the
 * server cannot read the tab's storage), so hydration matches.
 */
export function useSharedSample(scope: { appletId: string; triggerType: string } | null, builtin: Record<string, unknown>): [SampleChoice, (choice: SampleChoice) => void] {
  const [local, setLocal] = useState<SampleChoice>(() => builtinChoice(builtin));
  const appletId = scope?.appletId ?? null;
  const raw = useSyncExternalStore(
    subscribe,
    () => (appletId ? readRaw(appletId) : null),
    () => null,
  );
  if (!scope) return [local, setLocal];
  const stored = parseStored(raw, scope.triggerType);
  const set = (choice: SampleChoice) => write(scope.appletId, choice.source === "builtin" ? null : { triggerType: scope.triggerType, choice });
  return [stored ?? builtinChoice(builtin), set];
}
