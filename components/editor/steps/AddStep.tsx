"use client";
import { STEP_KINDS, type StepKind } from "./tree";

/**
 * "Add step": every kind of step, one button each. `names` gives a kind's accessible name where a
 * simple applet words it its own way ("Add another action", "Add filter code").
 */
export function AddStep({ onAdd, label = "Add step", names = {}, compact = false }: { onAdd: (kind: StepKind) => void; label?: string; names?: Partial<Record<StepKind, string>>; compact?: boolean }) {
  return (
    <div role="group" aria-label={label} className={`flex flex-wrap items-center gap-2 ${compact ? "" : "border-t border-slate-200 pt-4"}`}>
      <span className="text-xs font-medium text-slate-600">{label}:</span>
      {STEP_KINDS.map((k) => (
        <button
          key={k.kind}
          type="button"
          title={k.help}
          aria-label={names[k.kind] ?? `${label}: ${k.label}`}
          className={compact ? "rounded-md bg-white px-2 py-1 text-xs text-slate-700 ring-1 ring-slate-300 hover:bg-slate-50" : "btn-secondary"}
          onClick={() => onAdd(k.kind)}
        >
          + {k.label}
        </button>
      ))}
    </div>
  );
}
