import Link from "next/link";
import { RunsTable, type RunsQuery } from "@/components/RunsTable";
import { ZoneInput, ZoneName } from "@/components/RunStatusBadge";
import { CollapsibleFilters } from "@/components/CollapsibleFilters";
import { FilterSelect } from "@/components/FilterSelect";
import { RunSearchFields, SearchBoundNote } from "@/components/RunSearch";
import { dayBounds, validZone } from "@/lib/ui/run-timing";
import { appletList, runsPage } from "@/lib/api/queries";
import { services } from "@/lib/services";
import { RUN_STATUSES } from "@/lib/ui/run-status";
import { TIMED_REASON_CODES, TIMED_REASONS, type TimedReason } from "@/lib/timed/reasons";

export const dynamic = "force-dynamic";
export const metadata = { title: "Runs · whenthen" };

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v) || undefined;

/** Runs, newest first, 50 a page; the filters are a plain GET form so every view is a link. */
export default async function RunsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const query: RunsQuery = {
    applet_id: one(sp.applet_id),
    status: RUN_STATUSES.find((s) => s === one(sp.status)),
    reason: TIMED_REASON_CODES.find((r) => r === one(sp.reason)),
    from: DATE.test(one(sp.from) ?? "") ? one(sp.from) : undefined,
    to: DATE.test(one(sp.to) ?? "") ? one(sp.to) : undefined,
    cursor: one(sp.cursor),
    error: one(sp.error)?.trim().slice(0, 200) || undefined,
    payload: one(sp.payload)?.trim().slice(0, 200) || undefined,
  };
  const { app } = services();
  const applets = await appletList(app);
  // Dates are whole days in the reader's zone (the form sends it, as `tz`); `to` includes its day.
  // The same page GET /api/runs answers.
  const tz = validZone(one(sp.tz)) ? one(sp.tz)! : "UTC";
  const bounds = dayBounds(query.from, query.to, tz);
  const page = await runsPage(app, {
    appletId: query.applet_id,
    status: query.status,
    reason: query.reason,
    from: bounds.from,
    to: bounds.to,
    cursor: query.cursor,
    errorText: query.error,
    payloadText: query.payload,
    limit: 50,
  });
  // The API takes ISO bounds; the client table reloads through it with the same meaning.
  const apiQuery: RunsQuery = { ...query, from: bounds.from, to: bounds.to };
  const keep = (extra: Record<string, string | undefined>) =>
    "/runs?" + new URLSearchParams(Object.entries({ ...query, tz: query.from || query.to ? tz : undefined, cursor: undefined, ...extra }).filter((e): e is [string, string] => Boolean(e[1]))).toString();
  const filtered = Boolean(query.applet_id || query.status || query.reason || query.from || query.to || query.error || query.payload);
  // What the folded form (on a phone) says is on, in the form's own words.
  const appletName = query.applet_id ? (applets.find((a) => a.id === query.applet_id)?.name ?? "an applet") : undefined;
  const activeFilters = [
    appletName,
    query.status,
    query.reason ? TIMED_REASONS[query.reason as TimedReason] : undefined,
    query.from ? `from ${query.from}` : undefined,
    query.to ? `to ${query.to}` : undefined,
    query.error ? `error “${query.error}”` : undefined,
    query.payload ? `payload “${query.payload}”` : undefined,
  ].filter((x): x is string => Boolean(x));
  // A hand-edited or stale link must not look like it filters when it does not.
  const notes: React.ReactNode[] = [];
  const rawStatus = one(sp.status);
  if (rawStatus && !query.status) notes.push(`"${rawStatus}" is not a run status, so runs of every status are shown.`);
  const rawReason = one(sp.reason);
  if (rawReason && !query.reason) notes.push(`"${rawReason}" is not a reason a timed run is cancelled or skipped for, so runs of every reason are shown.`);
  for (const [key, label] of [["from", "From"], ["to", "To"]] as const) {
    const raw = one(sp[key]);
    if (raw && !query[key]) notes.push(`${label} "${raw}" is not a date (YYYY-MM-DD), so it is ignored.`);
  }
  if (query.from && query.to && query.from > query.to) {
    notes.push(
      <>
        From ({query.from}) is after To ({query.to}), so no run can match.{" "}
        <Link href={keep({ from: query.to, to: query.from })} className="font-medium underline">
          Swap the dates
        </Link>
      </>,
    );
  }

  return (
    <div className="mx-auto max-w-6xl">
      <h1 className="mb-4 text-xl font-semibold">Runs</h1>
      <CollapsibleFilters active={activeFilters}>
        <RunsFilterForm query={query} applets={applets} showClear={Boolean(filtered || notes.length)} />
      </CollapsibleFilters>
      {notes.length ? (
        <ul className="mb-4 rounded-md bg-amber-50 p-3 text-sm text-amber-900 ring-1 ring-amber-200" data-testid="filter-notes">
          {notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      ) : null}

      {page.search_stopped_at ? <SearchBoundNote stoppedAt={page.search_stopped_at} olderHref={keep({ cursor: page.next_cursor ?? undefined })} /> : null}

      <RunsTable key={JSON.stringify(apiQuery)} initial={page.runs} query={apiQuery} />

      <div className="mt-3 flex justify-between text-sm">
        {query.cursor ? (
          <Link href={keep({})} className="btn-secondary">
            ← Newest
          </Link>
        ) : (
          <span />
        )}
        {page.next_cursor ? (
          <Link href={keep({ cursor: page.next_cursor })} className="btn-secondary">
            Older →
          </Link>
        ) : null}
      </div>
    </div>
  );
}

/** The filters, a plain GET form so every view is a link. */
function RunsFilterForm({ query, applets, showClear }: { query: RunsQuery; applets: { id: string; name: string }[]; showClear: boolean }) {
  return (
    <form method="get" action="/runs" className="card grid grid-cols-2 items-end gap-3 sm:flex sm:flex-wrap">
      <FilterSelect id="f-applet" name="applet_id" label="Applet" value={query.applet_id ?? ""} any="All applets" options={applets.map((a) => ({ value: a.id, label: a.name }))} width="sm:w-56" className="col-span-2 sm:col-span-1" />
      <FilterSelect id="f-status" name="status" label="Status" value={query.status ?? ""} any="Any" options={RUN_STATUSES.map((s) => ({ value: s, label: s }))} width="sm:w-36" className="col-span-2 sm:col-span-1" />
      <FilterSelect id="f-reason" name="reason" label="Reason (timed runs)" value={query.reason ?? ""} any="Any" options={TIMED_REASON_CODES.map((r) => ({ value: r, label: TIMED_REASONS[r] }))} width="sm:w-56" className="col-span-2 sm:col-span-1" />
      <div className="min-w-0">
        <label htmlFor="f-from" className="field-label mb-1">
          From (day, <ZoneName />)
        </label>
        <input id="f-from" type="date" name="from" defaultValue={query.from ?? ""} className="input sm:w-40" />
      </div>
      <div className="min-w-0">
        <label htmlFor="f-to" className="field-label mb-1">
          To (day, <ZoneName />)
        </label>
        <input id="f-to" type="date" name="to" defaultValue={query.to ?? ""} className="input sm:w-40" />
      </div>
      <RunSearchFields error={query.error} payload={query.payload} />
      <div className="col-span-2 flex gap-3">
        <ZoneInput />
        <button type="submit" className="btn-primary">
          Filter
        </button>
        {showClear ? (
          <Link href="/runs" className="btn-secondary">
            Clear
          </Link>
        ) : null}
      </div>
    </form>
  );
}
