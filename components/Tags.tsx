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
  return (
    <div>
      <label htmlFor="a-tag" className="field-label mb-1">
        Tag
      </label>
      <select id="a-tag" name="tag" defaultValue={selected ?? ""} className="input sm:w-36">
        <option value="">Any</option>
        {selected && !tags.some((t) => t.toLowerCase() === selected.toLowerCase()) ? <option value={selected}>{selected}</option> : null}
        {tags.map((t) => (
          <option key={t} value={t}>
            {t}
          </option>
        ))}
      </select>
    </div>
  );
}
