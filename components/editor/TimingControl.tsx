"use client";
import { useState } from "react";
import { anchorNote, offsetWords, TIMING_LABELS, type AnchorOption, type TimingDraft } from "./timing";
import type { TimingPreviewItem } from "./api";
import { LocalTime } from "@/components/LocalTime";

const OTHER = "__other__";

/**
 * An action card's "Timing": run with the event (the default), or at an offset from an
 * anchor, the event's arrival or a time the sample carries, with its lateness. A save's problems
 * show under the field they are about; the preview against the sample under the whole.
 */
export function TimingControl({ idPrefix, timing, onChange, errors, anchors, preview, previewBusy, previewError }: {
  idPrefix: string;
  timing: TimingDraft;
  onChange: (timing: TimingDraft) => void;
  /** By field under `timing` ("" for the timing as a whole). */
  errors: Map<string, string[]>;
  /** The sample's time-looking values. */
  anchors: AnchorOption[];
  /** This action's planning against the sample, once the preview has answered. */
  preview: TimingPreviewItem | undefined;
  previewBusy: boolean;
  /** The preview could not be made (the definition does not check yet, the network). */
  previewError: string | null;
}) {
  const set = (patch: Partial<TimingDraft>) => onChange({ ...timing, ...patch });
  const later = timing.mode === "later";
  const known = timing.anchor === "event" || anchors.some((a) => a.path === timing.anchor);
  // A path typed by hand (or stored, and not in this sample) is edited in its own box.
  const [typingChosen, setTyping] = useState(false);
  const typing = typingChosen || !known;
  const errs = (field: string) => errors.get(field) ?? [];
  const id = (field: string) => `${idPrefix}-timing-${field}`;
  const words = offsetWords(timing.at);
  const anchorName = timing.anchor === "event" ? "the event's arrival" : timing.anchor || "(no path)";

  return (
    <fieldset className="rounded-md p-3 ring-1 ring-slate-200" data-testid={`${idPrefix}-timing`}>
      <legend className="px-1 text-sm font-medium text-slate-800">Timing</legend>
      <div className="flex flex-wrap gap-x-5 gap-y-1 text-sm" role="radiogroup" aria-label="When this action runs">
        <label className="flex items-center gap-2">
          <input type="radio" name={id("mode")} checked={!later} onChange={() => set({ mode: "now" })} className="h-4 w-4 text-indigo-600" />
          Run now, with the event
        </label>
        <label className="flex items-center gap-2">
          <input type="radio" name={id("mode")} checked={later} onChange={() => set({ mode: "later" })} className="h-4 w-4 text-indigo-600" />
          Run at an offset from a time
        </label>
      </div>
      <Errors messages={errs("")} />
      {later ? (
        <div className="mt-3 flex flex-col gap-3">
          <div className="grid gap-3 sm:grid-cols-[8rem_1fr]">
            <div data-field="timing.at">
              <label htmlFor={id("at")} className="field-label mb-1">
                {TIMING_LABELS.at}
              </label>
              <input id={id("at")} type="text" autoComplete="off" spellCheck={false} value={timing.at} placeholder="e.g. -24h" onChange={(e) => set({ at: e.target.value })} aria-invalid={errs("at").length > 0 || undefined} aria-describedby={id("at-help")} className={`input font-mono ${errs("at").length ? "ring-red-500" : ""}`} />
              <Errors messages={errs("at")} />
            </div>
            <div data-field="timing.anchor" className="min-w-0">
              <label htmlFor={id("anchor")} className="field-label mb-1">
                {TIMING_LABELS.anchor}
              </label>
              <select
                id={id("anchor")}
                value={typing ? OTHER : timing.anchor}
                onChange={(e) => {
                  if (e.target.value === OTHER) {
                    setTyping(true);
                    set({ anchor: timing.anchor === "event" ? "" : timing.anchor });
                  } else {
                    setTyping(false);
                    set({ anchor: e.target.value });
                  }
                }}
                aria-invalid={errs("anchor").length > 0 || undefined}
                className={`input ${errs("anchor").length ? "ring-red-500" : ""}`}
              >
                <option value="event">The event&apos;s arrival</option>
                {anchors.length ? (
                  <optgroup label="A time in the sample">
                    {anchors.map((a) => (
                      <option key={a.path} value={a.path}>
                        {a.path} = {a.sample}
                        {anchorNote(a.look) ? ` (${anchorNote(a.look)})` : ""}
                      </option>
                    ))}
                  </optgroup>
                ) : null}
                <option value={OTHER}>Another path…</option>
              </select>
              {typing ? (
                <input id={id("anchor-path")} type="text" aria-label="Anchor path" autoComplete="off" spellCheck={false} value={timing.anchor} placeholder="e.g. trigger.body.starts_at" onChange={(e) => set({ anchor: e.target.value })} className="input mt-2 font-mono" />
              ) : null}
              {!anchors.length ? <p className="help">No value in the sample looks like a time (ISO 8601 with its zone, or epoch milliseconds).</p> : null}
              <Errors messages={errs("anchor")} />
            </div>
          </div>
          <p id={id("at-help")} className="help -mt-1">
            <span className="font-mono">-24h</span> is a day before, <span className="font-mono">30m</span>, <span className="font-mono">2d</span> or <span className="font-mono">1h30m</span> after, <span className="font-mono">0</span> at the time itself.
            {words ? (
              <>
                {" "}
                This action runs <span className="font-medium text-slate-700" data-testid={`${idPrefix}-timing-summary`}>{words === "at" ? `at ${anchorName}` : `${words} ${anchorName}`}</span>.
              </>
            ) : null}
          </p>
          <div className="grid gap-3 sm:grid-cols-[8rem_1fr] sm:items-start">
            <div data-field="timing.lateness">
              <label htmlFor={id("lateness")} className="field-label mb-1">
                {TIMING_LABELS.lateness}
              </label>
              <input id={id("lateness")} type="text" autoComplete="off" spellCheck={false} value={timing.neverLate ? "" : timing.lateness} placeholder="1h" disabled={timing.neverLate} onChange={(e) => set({ lateness: e.target.value })} aria-invalid={errs("lateness").length > 0 || undefined} className={`input font-mono ${errs("lateness").length ? "ring-red-500" : ""}`} />
              <Errors messages={errs("lateness")} />
            </div>
            <div className="flex flex-col gap-1 text-sm sm:pt-6">
              <label className="flex items-center gap-2">
                <input type="checkbox" checked={timing.neverLate} onChange={(e) => set({ neverLate: e.target.checked })} className="h-4 w-4 rounded border-slate-300 text-indigo-600" />
                Never too late
              </label>
              {timing.anchor !== "event" ? (
                <label className="flex items-center gap-2" data-field="timing.guard_anchor">
                  <input type="checkbox" checked={timing.guardAnchor} onChange={(e) => set({ guardAnchor: e.target.checked })} className="h-4 w-4 rounded border-slate-300 text-indigo-600" />
                  {TIMING_LABELS.guard_anchor}
                </label>
              ) : null}
            </div>
          </div>
          <p className="help -mt-1">If the worker was down at the due time, the action still runs this late; later than that it is skipped as late. Default 1 h.</p>
          <Errors messages={errs("guard_anchor")} />
          <TimingPreviewLine idPrefix={idPrefix} preview={preview} busy={previewBusy} error={previewError} />
        </div>
      ) : null}
    </fieldset>
  );
}

/** "would run at 2026-10-11 10:00 in America/Mexico_City, moved from 22:00 by quiet hours", or the warning. */
function TimingPreviewLine({ idPrefix, preview, busy, error }: { idPrefix: string; preview: TimingPreviewItem | undefined; busy: boolean; error: string | null }) {
  if (error) return <p className="text-xs text-slate-600" data-testid={`${idPrefix}-timing-preview-error`}>No preview: {error}</p>;
  if (!preview) return <p className="text-xs text-slate-500">{busy ? "Planning against the sample…" : "When it would run for the sample appears here."}</p>;
  const warn = preview.status !== "pending";
  return (
    <p className={`rounded-md px-3 py-2 text-sm wrap-anywhere ring-1 ${warn ? "bg-amber-50 text-amber-900 ring-amber-200" : "bg-slate-50 text-slate-800 ring-slate-200"}`} data-testid={`${idPrefix}-timing-preview`} role={warn ? "status" : undefined}>
      <span className="font-medium">For the sample: </span>
      {preview.explanation}
      {/* The plan is said in the applet's zone; the reader's own clock comes with it, named. */}
      {preview.dueAt && preview.timezone !== readerZone() ? (
        <span className="block text-slate-600" data-testid={`${idPrefix}-timing-preview-local`}>
          That is <LocalTime iso={preview.dueAt} /> in your time.
        </span>
      ) : null}
    </p>
  );
}

function readerZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

function Errors({ messages }: { messages: string[] }) {
  return (
    <>
      {messages.map((m) => (
        <p key={m} className="mt-1 text-xs font-medium text-red-700" role="alert">
          {m}
        </p>
      ))}
    </>
  );
}
