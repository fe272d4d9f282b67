import Link from "next/link";
import { EnabledToggle } from "@/components/EnabledToggle";
import { LocalTime } from "@/components/LocalTime";
import { PausedNote } from "@/components/PausedNote";
import { PluginIcon } from "@/components/PluginIcon";
import { StatusBadge } from "@/components/StatusBadge";
import { TriggerErrorMark } from "@/components/TriggerErrorMark";
import { ExampleApplets } from "@/components/ExampleApplets";
import { exampleCards } from "@/lib/applets/example-cards";
import { appletList } from "@/lib/api/queries";
import { services } from "@/lib/services";
import { listApplets, needsAttention, tagsInUse, type AppletListQuery } from "@/lib/ui/applet-list";
import { formatAge } from "@/lib/core/overdue";
import { TagChips, TagFilter } from "@/components/Tags";
import { CollapsibleFilters } from "@/components/CollapsibleFilters";
import { FilterSelect, type FilterOption } from "@/components/FilterSelect";

export const dynamic = "force-dynamic";
export const metadata = { title: "Applets · whenthen" };

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v) || undefined;

type PageParams = Record<string, string | string[] | undefined>;

// The same list GET /api/applets answers, searched, filtered, sorted and paged here.
async function loadApplets(sp: PageParams) {
  const { app } = services();
  const all = await appletList(app);
  const query: AppletListQuery = {
    q: one(sp.q),
    trigger: one(sp.trigger),
    status: (["enabled", "disabled", "paused", "attention", "quiet"] as const).find((s) => s === one(sp.status)),
    sort: (["name", "last_run", "created"] as const).find((s) => s === one(sp.sort)),
    page: Number(one(sp.page) ?? 1) || 1,
    tag: one(sp.tag),
  };
  const listed = listApplets(
    all.map((a) => ({
      ...a,
      triggerType: a.trigger_type,
      createdAt: a.created_at,
      lastStatus: a.last_run_status,
      lastAt: a.last_run_at,
      triggerError: a.trigger_error,
      overdueMs: a.next_check_overdue_ms,
      failed24h: a.failed_24h,
      pausedReason: a.paused_reason,
      quiet: a.quiet,
    })),
    query,
  );
  return { app, all, query, listed };
}

type Loaded = Awaited<ReturnType<typeof loadApplets>>;
type Row = Loaded["listed"]["items"][number];

export default async function AppletsPage({ searchParams }: { searchParams: Promise<PageParams> }) {
  const sp = await searchParams;
  const { app, all, query, listed } = await loadApplets(sp);
  const applets = listed.items;
  const filtered = Boolean(query.q || query.trigger || query.status || query.tag);
  const tags = tagsInUse(all);
  const link = (extra: Record<string, string | undefined>) =>
    "/?" + new URLSearchParams(Object.entries({ q: query.q, trigger: query.trigger, status: query.status, tag: query.tag, sort: query.sort, ...extra }).filter((e): e is [string, string] => Boolean(e[1]))).toString();
  const triggerTypes = [...new Set(all.map((a) => a.trigger_type))].sort();

  return (
    <div className="mx-auto max-w-6xl">
      <header className="mb-4 flex items-center justify-between">
        <h1 className="text-xl font-semibold">Applets</h1>
        <Link href="/applets/new" className="btn-primary">
          New applet
        </Link>
      </header>

      {all.length > 0 ? (
        // On a phone the form folds away behind "Filters" (saying which are on), as the runs list's does.
        <CollapsibleFilters active={activeAppletFilters(query)}>
          <AppletFilters query={query} triggerTypes={triggerTypes} tags={tags} filtered={filtered} />
        </CollapsibleFilters>
      ) : null}

      {all.length > 0 && applets.length === 0 ? (
        <div className="card py-8 text-center text-sm text-slate-600" data-testid="no-match">
          No applet matches these filters.
        </div>
      ) : applets.length === 0 ? (
        <div className="card py-12 text-center">
          <p className="font-medium">No applets yet.</p>
          <p className="mt-1 text-sm text-slate-600">An applet is one rule: when a trigger fires (a webhook, a schedule, a feed, an email, a value that changes), run its actions.</p>
          <Link href="/applets/new" className="btn-primary mt-4">
            Create your first applet
          </Link>
          <ExampleApplets examples={exampleCards(app.config.inboundDomain)} />
        </div>
      ) : (
        // On a phone each applet is a card of labelled cells (.stack-rows), its name first.
        <div className="relative overflow-x-auto rounded-lg bg-white shadow-sm ring-1 ring-slate-200">
          <table className="stack-rows min-w-full divide-y divide-slate-200">
            <thead className="bg-slate-50">
              <tr>
                <th className="th">Name</th>
                <th className="th">When → then</th>
                <th className="th">Enabled</th>
                <th className="th">Last run</th>
                <th className="th text-right">Runs (24 h)</th>
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-100">
              {applets.map((a) => (
                <AppletRow key={a.id} a={a} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {listed.pages > 1 ? <Pager listed={listed} link={link} /> : null}
    </div>
  );
}

const APPLET_STATUSES: (FilterOption & { label: string })[] = [
  { value: "enabled", label: "Enabled" },
  { value: "disabled", label: "Disabled" },
  { value: "paused", label: "Paused" },
  { value: "attention", label: "Needs attention" },
  { value: "quiet", label: "Quiet" },
];
const APPLET_SORTS: FilterOption[] = [
  { value: "name", label: "Name" },
  { value: "last_run", label: "Last run" },
  { value: "created", label: "Newest" },
];

function activeAppletFilters(query: AppletListQuery): string[] {
  return [
    query.q ? `“${query.q}”` : undefined,
    query.trigger,
    APPLET_STATUSES.find((o) => o.value === query.status)?.label,
    query.tag ? `tag ${query.tag}` : undefined,
  ].filter((x): x is string => Boolean(x));
}

function AppletFilters({ query, triggerTypes, tags, filtered }: { query: AppletListQuery; triggerTypes: string[]; tags: string[]; filtered: boolean }) {
  return (
    <form method="get" action="/" className="card grid grid-cols-2 items-end gap-3 sm:flex sm:flex-wrap" role="search">
      <div className="col-span-2 sm:col-span-1">
        <label htmlFor="a-q" className="field-label mb-1">
          Search by name
        </label>
        <input id="a-q" type="search" name="q" defaultValue={query.q ?? ""} className="input sm:w-56" />
      </div>
      <FilterSelect id="a-trigger" name="trigger" label="Trigger" value={query.trigger ?? ""} any="Any" options={triggerTypes.map((t) => ({ value: t, label: t }))} width="sm:w-36" />
      <FilterSelect id="a-status" name="status" label="Status" value={query.status ?? ""} any="Any" options={APPLET_STATUSES} width="sm:w-44" />
      <TagFilter tags={tags} selected={query.tag} />
      <FilterSelect id="a-sort" name="sort" label="Sort by" value={query.sort ?? "name"} options={APPLET_SORTS} width="sm:w-36" />
      <div className="col-span-2 flex gap-3">
        <button type="submit" className="btn-primary">
          Show
        </button>
        {filtered ? (
          <Link href="/" className="btn-secondary">
            Clear
          </Link>
        ) : null}
      </div>
    </form>
  );
}

function AppletRow({ a }: { a: Row }) {
  return (
    <tr key={a.id} className="hover:bg-slate-50">
      <td className="td stack-full sm:max-w-xs">
        <Link href={`/applets/${a.id}`} className="block font-medium break-words text-indigo-700 hover:underline sm:truncate">
          {a.name}
        </Link>
        <TagChips tags={a.tags} />
        {a.paused_reason ? (
          <span className="mt-0.5 block text-xs font-medium text-amber-800" data-testid="paused-mark">
            <PausedNote reason={a.paused_reason} at={a.paused_at} />
          </span>
        ) : null}
        {needsAttention(a) ? (
          <span className="mt-1 flex flex-wrap items-center gap-x-2 gap-y-1 text-xs" data-testid="needs-attention">
            {a.triggerError ? <TriggerErrorMark message={a.triggerError} /> : null}
            {a.quiet ? (
              <span className="block w-full break-words whitespace-normal text-amber-800" data-testid="quiet-mark">
                <span className="mr-1 rounded bg-amber-100 px-1.5 py-0.5 font-semibold">quiet</span>
                {a.quiet}
              </span>
            ) : null}
            {a.overdueMs != null ? (
              <span className="text-amber-800" data-testid="overdue-mark">
                next check was due {formatAge(a.overdueMs)} ago
              </span>
            ) : null}
            {a.lastStatus === "failed" || a.lastStatus === "dead" ? <span className="text-red-700">the last run {a.lastStatus}</span> : null}
            {a.lastStatus === "retrying" ? (
              <span className="text-amber-800" data-testid="retrying-mark">
                the last run failed an attempt and is retrying
              </span>
            ) : null}
          </span>
        ) : null}
      </td>
      <td className="td" data-label="When → then">
        <span className="inline-flex items-center gap-1.5 align-middle">
          <PluginIcon kind="trigger" type={a.trigger_type} />
          <span className="text-slate-400" aria-hidden="true">
            →
          </span>
          {a.action_types.map((t, i) => (
            <PluginIcon key={i} kind="action" type={t} />
          ))}
        </span>
      </td>
      <td className="td" data-label="Enabled">
        <EnabledToggle id={a.id} enabled={a.enabled} name={a.name} />
      </td>
      <td className="td whitespace-nowrap" data-label="Last run">
        {a.last_run_status ? (
          <span className="inline-flex items-center gap-2">
            <StatusBadge status={a.last_run_status} />
            <LocalTime iso={a.last_run_at} className="text-slate-600" />
          </span>
        ) : (
          <span className="text-slate-400">never run</span>
        )}
      </td>
      <td className="td text-right whitespace-nowrap tabular-nums" data-label="Runs (24 h)">
        {a.runs_24h}
        {a.failed_24h > 0 ? (
          <Link
            href={`/runs?applet_id=${encodeURIComponent(a.id)}`}
            className="ml-2 rounded bg-red-50 px-1.5 py-0.5 text-xs font-medium text-red-800 ring-1 ring-red-200 hover:underline"
            data-testid="failed-24h"
            title={`${a.failed_24h} of the runs of the last 24 hours failed or died`}
          >
            {a.failed_24h} failed
          </Link>
        ) : null}
      </td>
    </tr>
  );
}

function Pager({ listed, link }: { listed: Loaded["listed"]; link: (extra: Record<string, string | undefined>) => string }) {
  return (
    <div className="mt-3 flex items-center justify-between text-sm">
      {listed.page > 1 ? (
        <Link href={link({ page: String(listed.page - 1) })} className="btn-secondary">
          ← Previous
        </Link>
      ) : (
        <span />
      )}
      <span className="text-slate-600">
        Page {listed.page} of {listed.pages} · {listed.total} applets
      </span>
      {listed.page < listed.pages ? (
        <Link href={link({ page: String(listed.page + 1) })} className="btn-secondary">
          Next →
        </Link>
      ) : (
        <span />
      )}
    </div>
  );
}
