import type { ReactNode } from "react";

export interface FilterOption {
  value: string;
  label: ReactNode;
}

/**
 * One labelled select of a page's GET filter form (the runs and applets lists): the label above,
 * the select uncontrolled so the form submits what the reader picked and the page reads it back
 * from the query string.
 */
export function FilterSelect({
  id,
  name,
  label,
  value,
  any,
  options,
  width,
  className,
}: {
  id: string;
  name: string;
  label: ReactNode;
  /** The option selected when the page opens (from the query string). */
  value: string;
  /** The first option's text, for the empty value that filters nothing ("Any"); none when absent. */
  any?: string;
  options: readonly FilterOption[];
  /** The select's width from the sm breakpoint up, e.g. "sm:w-36" (full width on a phone). */
  width: string;
  /** The wrapper's classes, where the form's grid places it. */
  className?: string;
}) {
  return (
    <div className={className}>
      <label htmlFor={id} className="field-label mb-1">
        {label}
      </label>
      <select id={id} name={name} defaultValue={value} className={`input ${width}`}>
        {any !== undefined ? <option value="">{any}</option> : null}
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
}
