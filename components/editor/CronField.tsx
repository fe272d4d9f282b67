"use client";
import { nextRunAfter, validateTiming } from "@whenthen/schedules";
import { useIsClient } from "@/components/LocalTime";
import { CRON_PRESETS } from "@/lib/ui/format";

/** The schedule's cron expression: presets, and the next three fire times in the chosen zone. */
export function CronField({ id, value, onChange, timezone, invalid }: { id: string; value: string; onChange: (v: string) => void; timezone: string; invalid?: boolean }) {
  const client = useIsClient();
  const preset = CRON_PRESETS.find((p) => p.cron === value.trim());
  return (
    <div className="flex flex-col gap-2">
      {/* Side by side from `sm`; on a phone the 14rem preset list would leave the input a sliver. */}
      <div className="flex flex-col gap-2 sm:flex-row">
        <input
          id={id}
          type="text"
          value={value}
          onChange={(e) => onChange(e.target.value)}
          placeholder="0 9 * * *"
          spellCheck={false}
          autoComplete="off"
          aria-invalid={invalid || undefined}
          className={`input font-mono ${invalid ? "ring-red-500" : ""}`}
        />
        <select aria-label="Cron presets" value="" onChange={(e) => e.target.value && onChange(e.target.value)} className="input sm:w-56 sm:shrink-0">
          <option value="">Presets…</option>
          {CRON_PRESETS.map((p) => (
            <option key={p.cron} value={p.cron}>
              {p.label} ({p.cron})
            </option>
          ))}
        </select>
      </div>
      {/* Fire times depend on "now" and the browser's Intl data: computed after hydration only. */}
      {client ? <CronPreview expr={value.trim()} timezone={timezone} label={preset?.label} /> : null}
    </div>
  );
}

function CronPreview({ expr, timezone, label }: { expr: string; timezone: string; label?: string }) {
  // The field's own help says what the five fields are; this only says what appears here.
  if (!expr) return <p className="help">Pick a preset or type an expression: its next three fire times appear here.</p>;
  // The scheduler's own function, so the preview follows the same DST rule as the fires.
  const timing = { cron: expr, timezone: timezone || undefined };
  try {
    validateTiming(timing);
  } catch (err) {
    return <p className="text-xs text-red-700">Not a valid cron expression: {(err as Error).message.replace(/^schedules: (invalid cron "[^"]*": )?/, "")}</p>;
  }
  const runs: Date[] = [];
  try {
    for (let from = new Date(); runs.length < 3; ) runs.push((from = nextRunAfter(timing, from)));
  } catch {
    // No later run (a date that has passed for good): the ones found are all there is.
  }
  const fmt = new Intl.DateTimeFormat("en-US", {
    timeZone: timezone || undefined,
    weekday: "long",
    month: "long",
    day: "numeric",
    year: "numeric",
    hour: "numeric",
    minute: "2-digit",
    timeZoneName: "short",
  });
  return (
    <div className="rounded-md bg-indigo-50 px-3 py-2 text-xs text-indigo-900" data-testid="cron-preview">
      {label ? <p className="font-medium">{label}, in {timezone}.</p> : <p className="font-medium">In {timezone}:</p>}
      {runs.length ? (
        <ul className="mt-1 list-disc pl-5">
          {runs.map((r) => (
            <li key={r.toISOString()}>{fmt.format(r)}</li>
          ))}
        </ul>
      ) : (
        <p>This expression never fires again.</p>
      )}
    </div>
  );
}
