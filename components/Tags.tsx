import { FilterSelect } from "./FilterSelect";

/** An applet's tags as small chips (the applets list, under the name). */
export function TagChips({ tags }: { tags: readonly string[] }) {
  if (!tags.length) return null;
  return (
    <span className="mt-0.5 flex flex-wrap gap-1" data-testid="applet-tags">
      {tags.map((t) => (
        <span key={t} className="rounded bg-slate-100 px-1.5 py-0.5 text-[11px] text-slate-700 ring-1 ring-inset ring-slate-200">
          {t}
        </span>
      ))}
    </span>
  );
}

/** The applets list's tag filter: part of its GET form; shown once any applet has a tag. */
export function TagFilter({ tags, selected }: { tags: string[]; selected?: string }) {
  if (!tags.length && !selected) return null;
  // A tag from the link that no applet has (any more) stays selectable, so the form says what it filtered by.
  const stale = selected && !tags.some((t) => t.toLowerCase() === selected.toLowerCase()) ? [selected] : [];
  return (
    <FilterSelect id="a-tag" name="tag" label="Tag" value={selected ?? ""} any="Any" options={[...stale, ...tags].map((t) => ({ value: t, label: t }))} width="sm:w-36" />
  );
}
