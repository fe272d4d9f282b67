"use client";
import { useId, useState } from "react";

/**
 * A filter form that folds away on a phone, where it would fill the first screen: a "Filters"
 * button (saying how many are on) opens it; from the sm breakpoint up the form is always shown
 * and the button is not.
 */
export function CollapsibleFilters({ active, children }: { active: string[]; children: React.ReactNode }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  return (
    <div className="mb-4">
      <button type="button" className="btn-secondary w-full justify-between sm:hidden" aria-expanded={open} aria-controls={id} onClick={() => setOpen((o) => !o)} data-testid="filters-toggle">
        <span className="min-w-0 truncate">
          Filters
          {active.length ? <span className="ml-1 font-normal text-slate-600">· {active.join(", ")}</span> : null}
        </span>
        <span aria-hidden="true" className="text-slate-500">
          {open ? "▲" : "▼"}
        </span>
      </button>
      <div id={id} className={open ? "mt-2 sm:mt-0" : "max-sm:hidden"}>
        {children}
      </div>
    </div>
  );
}
