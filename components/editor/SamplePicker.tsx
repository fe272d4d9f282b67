"use client";
import { useEffect, useState } from "react";
import { parseSample } from "@/lib/ui/sample";
import { pastEvents, type PastEvent } from "./api";

/** Where the sample came from: the trigger's built-in one, a fetched item, a past event, or typed. */
export interface SampleChoice {
  /** "builtin", "fetched:<i>", "event:<id>", or "edited". */
  source: string;
  text: string;
}

export const builtinChoice = (sample: Record<string, unknown>): SampleChoice => ({ source: "builtin", text: JSON.stringify(sample, null, 2) });

/**
 * "Test with": the sample Preview, Test filter and Send test event run against. The built-in
 * sample, an item "Fetch now" returned, or one of the applet's last 20 events; editable as JSON
 * (a draft title to check `skip()` on), validated as it is typed.
 */
export function SamplePicker({ appletId, builtin, fetched, value, onChange, idPrefix = "sample", textLabel = "Sample (JSON)" }: {
  appletId?: string;
  builtin: Record<string, unknown>;
  /** Items "Fetch now" returned (a feed's entries), newest first. */
  fetched: Record<string, unknown>[];
  value: SampleChoice;
  onChange: (choice: SampleChoice) => void;
  idPrefix?: string;
  /** The JSON box's label (two pickers on one page need two). */
  textLabel?: string;
}) {
  const [events, setEvents] = useState<PastEvent[] | null>(null);
  const [eventsError, setEventsError] = useState<string | null>(null);
  useEffect(() => {
    if (!appletId) return;
    let live = true;
    void pastEvents(appletId).then((a) => {
      if (!live) return;
      if (a.ok) setEvents(a.value);
      else setEventsError(a.error);
    });
    return () => {
      live = false;
    };
  }, [appletId]);

  const parsed = parseSample(value.text);
  function pick(source: string) {
    if (source === "builtin") return onChange(builtinChoice(builtin));
    if (source.startsWith("fetched:")) {
      const item = fetched[Number(source.slice("fetched:".length))];
      if (item) onChange({ source, text: JSON.stringify(item, null, 2) });
      return;
    }
    if (source.startsWith("event:")) {
      const e = events?.find((x) => `event:${x.id}` === source);
      if (e) onChange({ source, text: JSON.stringify(e.payload, null, 2) });
    }
  }
  const title = (o: Record<string, unknown>) => (typeof o.title === "string" ? o.title : typeof o.subject === "string" ? o.subject : JSON.stringify(o).slice(0, 60));

  return (
    <div className="flex flex-col gap-2" data-testid="sample-picker">
      <div className="flex flex-wrap items-center gap-2">
        <label htmlFor={`${idPrefix}-source`} className="field-label">
          Test with
        </label>
        <select id={`${idPrefix}-source`} value={value.source} onChange={(e) => pick(e.target.value)} className="input w-auto max-w-full min-w-0 flex-1 sm:flex-none sm:w-96">
          <option value="builtin">The built-in sample</option>
          {value.source === "edited" ? <option value="edited">The sample as edited below</option> : null}
          {fetched.length ? (
            <optgroup label="Fetched now">
              {fetched.map((item, i) => (
                <option key={i} value={`fetched:${i}`}>
                  {title(item)}
                </option>
              ))}
            </optgroup>
          ) : null}
          {events?.length ? (
            <optgroup label={`Past events (last ${events.length})`}>
              {events.map((e) => (
                <option key={e.id} value={`event:${e.id}`}>
                  {new Date(e.received_at).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" })} · {e.source} · {title(e.payload)}
                </option>
              ))}
            </optgroup>
          ) : null}
        </select>
      </div>
      {eventsError ? <p className="text-xs text-slate-500">Past events could not be loaded: {eventsError}</p> : null}
      <details open={value.source !== "builtin" || !parsed.ok}>
        <summary className="cursor-pointer text-xs text-slate-600">The sample as JSON (edit it to try other values)</summary>
        <textarea
          id={`${idPrefix}-json`}
          aria-label={textLabel}
          value={value.text}
          onChange={(e) => onChange({ source: "edited", text: e.target.value })}
          rows={8}
          spellCheck={false}
          aria-invalid={!parsed.ok || undefined}
          className={`input mt-1 font-mono text-xs ${parsed.ok ? "" : "ring-red-500"}`}
        />
        {!parsed.ok ? (
          <p className="mt-1 text-xs font-medium text-red-700" role="alert">
            {parsed.error} Preview and Test filter use the built-in sample until this is fixed.
          </p>
        ) : null}
      </details>
    </div>
  );
}
