"use client";
import type { IngredientGroup } from "@/lib/ui/format";

/** "Insert ingredient": a plain select that hands the chosen `{{…}}` to `onPick` and resets itself. */
export function IngredientPicker({ groups, onPick, fieldLabel }: { groups: IngredientGroup[]; onPick: (value: string) => void; fieldLabel: string }) {
  return (
    <select
      aria-label={`Insert ingredient into ${fieldLabel}`}
      value=""
      onChange={(e) => {
        if (e.target.value) onPick(e.target.value);
      }}
      className="w-40 rounded-md border-0 bg-slate-50 sm:w-auto sm:max-w-[14rem] py-1 pr-7 pl-2 text-xs text-slate-700 ring-1 ring-slate-300 ring-inset focus:ring-2 focus:ring-indigo-600"
    >
      <option value="">Insert ingredient…</option>
      {groups.map((g) => (
        <optgroup key={g.label} label={g.label}>
          {g.options.map((o) => (
            <option key={o.value} value={o.value} title={o.description}>
              {o.label}
            </option>
          ))}
        </optgroup>
      ))}
    </select>
  );
}
