"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import type { RunControls as Controls } from "@/lib/definition/controls";
import { api, errorBody } from "@/lib/ui/api-client";

export interface RunControlsProps {
  appletId: string;
  controls: Controls;
  /** Said by the server when the settings were read (a key that renders empty for the latest event). */
  warnings: { path: string; message: string }[];
}

type Problem = { path: string; message: string };

/** A refused field's message under it, named as the API names it. */
function FieldError({ problems, path }: { problems: Problem[]; path: string }) {
  const m = problems.find((x) => x.path === path)?.message;
  return m ? <p className="mt-1 text-xs text-red-800">{`${path}: ${m}`}</p> : null;
}

/**
 * Controls over runs: concurrency (in order, N in parallel, one at a time per key) and whether a
 * waiting run keeps its place (strict order), a rate limit and a debounce. Saving them is a save of
 * the applet (a new version). Every field refused is shown under itself, named as the API names it.
 */
export function RunControls(p: RunControlsProps) {
  const router = useRouter();
  const c = p.controls;
  const [mode, setMode] = useState<string>(c.concurrency?.mode ?? "in_order");
  const [max, setMax] = useState(c.concurrency?.mode === "parallel" ? String(c.concurrency.max) : "4");
  const [key, setKey] = useState(c.concurrency?.mode === "per_key" ? c.concurrency.key : "{{trigger.body.customer_id}}");
  const [strict, setStrict] = useState(c.order === "strict");
  const [rateOn, setRateOn] = useState(Boolean(c.rate_limit));
  const [rateMax, setRateMax] = useState(String(c.rate_limit?.max ?? 10));
  const [ratePeriod, setRatePeriod] = useState(String(c.rate_limit?.period_seconds ?? 60));
  const [overflow, setOverflow] = useState<string>(c.rate_limit?.overflow ?? "wait");
  const [debounceOn, setDebounceOn] = useState(Boolean(c.debounce));
  const [windowSeconds, setWindowSeconds] = useState(String(c.debounce?.window_seconds ?? 30));
  const [keep, setKeep] = useState<string>(c.debounce?.keep ?? "all");
  const [problems, setProblems] = useState<Problem[]>([]);
  const [warnings, setWarnings] = useState(p.warnings);
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const num = (v: string) => (v.trim() === "" ? Number.NaN : Number(v));
  async function save(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setStatus(null);
    setProblems([]);
    const json = {
      ...(mode === "parallel" ? { concurrency: { mode: "parallel" as const, max: num(max) } } : mode === "per_key" ? { concurrency: { mode: "per_key" as const, key } } : {}),
      ...(rateOn ? { rate_limit: { max: num(rateMax), period_seconds: num(ratePeriod), overflow: overflow as "wait" | "drop" } } : {}),
      ...(debounceOn ? { debounce: { window_seconds: num(windowSeconds), keep: keep as "first" | "last" | "all" } } : {}),
      // Strict order is per lane in the order runs came: parallel lanes have no such order.
      ...(strict && mode !== "parallel" ? { order: "strict" as const } : {}),
    };
    const res = await api.api.applets[":id"].controls.$put({ param: { id: p.appletId }, json }).catch(() => null);
    setBusy(false);
    if (res?.ok) {
      const body = (await res.json()) as { warnings: Problem[] };
      setWarnings(body.warnings);
      setStatus({ ok: true, text: "Saved (a new version of the applet)." });
      router.refresh();
      return;
    }
    const body = res ? await errorBody(res) : {};
    setProblems(body.problems ?? []);
    setStatus({ ok: false, text: body.error ?? (res ? `failed (${res.status})` : "network error") });
  }

  return (
    <form onSubmit={(e) => void save(e)} className="flex flex-col gap-4 text-sm" aria-label="Controls over runs" data-testid="run-controls">
      <fieldset className="flex flex-col gap-2">
        <legend className="field-label mb-1">Concurrency</legend>
        <div className="flex flex-wrap gap-x-4 gap-y-1">
          {[
            ["in_order", "One at a time, in order"],
            ["parallel", "Several in parallel"],
            ["per_key", "One at a time per key"],
          ].map(([value, label]) => (
            <label key={value} className="flex items-center gap-2">
              <input type="radio" name="concurrency" value={value} checked={mode === value} onChange={() => setMode(value!)} />
              {label}
            </label>
          ))}
        </div>
        {mode === "parallel" ? (
          <div>
            <label htmlFor="controls-max" className="field-label mb-1">
              At most this many at once
            </label>
            <input id="controls-max" className="input w-28" inputMode="numeric" value={max} onChange={(e) => setMax(e.target.value)} />
            <FieldError problems={problems} path="concurrency.max" />
          </div>
        ) : null}
        {mode === "per_key" ? (
          <div>
            <label htmlFor="controls-key" className="field-label mb-1">
              Key (a template, rendered for each event)
            </label>
            <input id="controls-key" className="input w-full max-w-md font-mono" value={key} onChange={(e) => setKey(e.target.value)} />
            <FieldError problems={problems} path="concurrency.key" />
            <p className="help mt-1">Runs with the same key run one at a time, in order; different keys run side by side. An empty key is one key of its own.</p>
          </div>
        ) : null}
        {mode !== "parallel" ? (
          <div>
            <label className="flex items-center gap-2">
              <input type="checkbox" checked={strict} onChange={(e) => setStrict(e.target.checked)} data-testid="controls-strict" /> Strict order: a run that waits holds back the next ones
            </label>
            <FieldError problems={problems} path="order" />
            <p className="help mt-1">
              {mode === "per_key" ? "Per key: while" : "While"} a run waits at a wait step, later runs stay queued, in order, until it has resumed and finished. Off, they run while it waits.
            </p>
          </div>
        ) : null}
      </fieldset>

      <RateLimitFields problems={problems} on={rateOn} setOn={setRateOn} max={rateMax} setMax={setRateMax} period={ratePeriod} setPeriod={setRatePeriod} overflow={overflow} setOverflow={setOverflow} />

      <DebounceFields problems={problems} on={debounceOn} setOn={setDebounceOn} windowSeconds={windowSeconds} setWindowSeconds={setWindowSeconds} keep={keep} setKeep={setKeep} />

      {warnings.map((w) => (
        <p key={w.path} role="status" className="rounded-md bg-amber-50 p-2 text-amber-900 ring-1 ring-amber-200" data-testid="controls-warning">
          {`Key ${w.message}.`}
        </p>
      ))}
      <div className="flex flex-wrap items-center gap-3">
        <button type="submit" className="btn-secondary" disabled={busy}>
          {busy ? "Saving…" : "Save controls"}
        </button>
        {status ? (
          <span role={status.ok ? "status" : "alert"} className={status.ok ? "text-green-800" : "text-red-800"}>
            {status.text}
          </span>
        ) : null}
      </div>
    </form>
  );
}
type Setter<T> = (v: T) => void;

function RateLimitFields(p: {
  problems: Problem[];
  on: boolean;
  setOn: Setter<boolean>;
  max: string;
  setMax: Setter<string>;
  period: string;
  setPeriod: Setter<string>;
  overflow: string;
  setOverflow: Setter<string>;
}) {
  const { problems } = p;
  return (
    <fieldset className="flex flex-col gap-2">
      <legend className="field-label mb-1">Rate limit</legend>
      <label className="flex items-center gap-2">
        <input type="checkbox" checked={p.on} onChange={(e) => p.setOn(e.target.checked)} /> Limit how many runs start
      </label>
      {p.on ? (
        <div className="flex flex-wrap items-end gap-3">
          <div>
            <label htmlFor="controls-rate-max" className="field-label mb-1">
              At most (runs)
            </label>
            <input id="controls-rate-max" className="input w-24" inputMode="numeric" value={p.max} onChange={(e) => p.setMax(e.target.value)} />
            <FieldError problems={problems} path="rate_limit.max" />
          </div>
          <div>
            <label htmlFor="controls-rate-period" className="field-label mb-1">
              per (seconds)
            </label>
            <input id="controls-rate-period" className="input w-28" inputMode="numeric" value={p.period} onChange={(e) => p.setPeriod(e.target.value)} />
            <FieldError problems={problems} path="rate_limit.period_seconds" />
          </div>
          <div>
            <label htmlFor="controls-overflow" className="field-label mb-1">
              Over the limit
            </label>
            <select id="controls-overflow" className="input" value={p.overflow} onChange={(e) => p.setOverflow(e.target.value)}>
              <option value="wait">wait, in order</option>
              <option value="drop">drop (recorded in the ledger)</option>
            </select>
          </div>
        </div>
      ) : null}
    </fieldset>
  );
}

function DebounceFields(p: {
  problems: Problem[];
  on: boolean;
  setOn: Setter<boolean>;
  windowSeconds: string;
  setWindowSeconds: Setter<string>;
  keep: string;
  setKeep: Setter<string>;
}) {
  const { problems } = p;
  return (
    <fieldset className="flex flex-col gap-2">
      <legend className="field-label mb-1">Debounce</legend>
      <label className="flex items-center gap-2">
        <input type="checkbox" checked={p.on} onChange={(e) => p.setOn(e.target.checked)} /> Merge events that arrive close together into one run
      </label>
      {p.on ? (
        <div className="flex flex-wrap items-end gap-3">
          <div>
            <label htmlFor="controls-window" className="field-label mb-1">
              Window (seconds, at most 7 days)
            </label>
            <input id="controls-window" className="input w-28" inputMode="numeric" value={p.windowSeconds} onChange={(e) => p.setWindowSeconds(e.target.value)} />
            <FieldError problems={problems} path="debounce.window_seconds" />
          </div>
          <div>
            <label htmlFor="controls-keep" className="field-label mb-1">
              The run sees
            </label>
            <select id="controls-keep" className="input" value={p.keep} onChange={(e) => p.setKeep(e.target.value)}>
              <option value="all">all events, as {"{{trigger.events}}"}</option>
              <option value="first">the first event</option>
              <option value="last">the last event</option>
            </select>
          </div>
        </div>
      ) : null}
    </fieldset>
  );
}
