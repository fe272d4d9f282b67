import { Breadcrumb } from "@/components/Breadcrumb";
import Link from "next/link";
import { notFound } from "next/navigation";
import { AppletAlertsForm } from "@/components/AppletAlertsForm";
import { AppletCounters } from "@/components/AppletCounters";
import { PausedNote } from "@/components/PausedNote";
import { CopyButton } from "@/components/CopyButton";
import { DeleteAppletButton } from "@/components/DeleteAppletButton";
import { DuplicateAppletButton } from "@/components/DuplicateAppletButton";
import { EnabledToggle } from "@/components/EnabledToggle";
import { LocalTime } from "@/components/LocalTime";
import { PlannedRuns } from "@/components/PlannedRuns";
import { plannedListsOf, RECENT_LIMIT, UPCOMING_LIMIT, type PlannedLists } from "@/lib/ui/planned";
import { PluginIcon } from "@/components/PluginIcon";
import { RunsTable } from "@/components/RunsTable";
import { TestEventForm } from "@/components/TestEventForm";
import { DryRun } from "@/components/DryRun";
import { WebhookCurl } from "@/components/WebhookCurl";
import { AppletTagsEditor } from "@/components/AppletTagsEditor";
import { AppletEditor } from "@/components/editor/AppletEditor";
import { InboundAddress } from "@/components/editor/panels";
import { AppletHistory } from "@/components/AppletHistory";
import { ExpectedActivity } from "@/components/ExpectedActivity";
import { FireLedger } from "@/components/FireLedger";
import { RunControls } from "@/components/RunControls";
import { controlsView } from "@/lib/applets/controls";
import { activityView, ledgerPage } from "@/lib/fires/view";
import { formatInTimeZone } from "date-fns-tz";
import { alertChannelOptions, appletDetail, type Meta, type MetaTrigger, appletVersions, meta as readMeta, plannedOf, runsPage, secretList } from "@/lib/api/queries";
import { services } from "@/lib/services";
import { hasTimedActions } from "@/lib/timed/rule";
import { triggerRegistry, type RegisteredTrigger } from "@/lib/triggers";

export const dynamic = "force-dynamic";
export const metadata = { title: "Applet · whenthen" };

export default async function AppletPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { id } = await params;
  const query = await searchParams;
  // ?version=N (a run page's link): the history opens on that version. ?restored=N: a restore
  // just saved version N, and the editor starts again from it.
  const numberOf = (v: unknown) => (typeof v === "string" && /^[1-9][0-9]{0,8}$/.test(v) ? Number(v) : undefined);
  const selectedVersion = numberOf(query.version);
  const restored = numberOf(query.restored);
  const { app } = services();
  const a = await appletDetail(app, id);
  if (!a) notFound();
  const meta = await readMeta(app);
  const secrets = (await secretList(app)).map((s) => s.name);
  const { runs } = await runsPage(app, { appletId: a.id, limit: 50 });
  const planned = hasTimedActions(a.definition) ? await plannedLists(app, a.id) : null;
  const versions = (await appletVersions(app, a.id)) ?? [];
  const trigger = meta.triggers.find((t) => t.type === a.trigger_type);
  // How the trigger is fed decides what the page shows: a URL for a request-fed one, the next check for a polled one.
  const feed = triggerRegistry.get(a.trigger_type)?.feed;
  const channelActions = alertChannelOptions(meta);
  const settingsChannel = (await app.store.alerts.settings()).channel?.type ?? null;
  const stored = await app.store.applets.get(a.id);
  const activity = stored ? await activityView(app, stored) : null;
  const ledger = await ledgerPage(app, a.id, { limit: 50 });
  const controls = stored ? await controlsView(app, stored) : null;

  return (
    <div className="mx-auto max-w-5xl">
      <Breadcrumb href="/" label="Applets" />
      <AppletHeader a={a} />

      {a.paused_reason ? (
        <div role="status" className="mb-4 rounded-md bg-amber-50 p-3 text-sm text-amber-900 ring-1 ring-amber-200" data-testid="paused-banner">
          <p className="font-semibold">This applet is paused</p>
          <p className="mt-1">
            <PausedNote reason={a.paused_reason} at={a.paused_at} />. Its last runs below say what went wrong; the switch next to its name turns it back on.
          </p>
        </div>
      ) : null}

      <TriggerSection a={a} meta={meta} trigger={trigger} feed={feed} />

      {activity ? (
        <section className="card mb-4" id="activity">
          <h2 className="mb-2 text-base font-semibold">Expected activity</h2>
          <ExpectedActivity
            appletId={a.id}
            expectEveryHours={activity.expect_every_hours}
            quiet={activity.quiet}
            polled={feed === "polled"}
            nextFires={activity.next_fires}
            zone={activity.zone}
            nextFiresInZone={activity.next_fires.map((iso) => formatInTimeZone(new Date(iso), activity.zone ?? "UTC", "EEE yyyy-MM-dd HH:mm"))}
          />
        </section>
      ) : null}

      {controls ? (
        <section className="card mb-4" id="controls">
          <h2 className="mb-2 text-base font-semibold">Controls over runs</h2>
          <RunControls appletId={a.id} controls={controls.controls} warnings={controls.warnings} />
        </section>
      ) : null}

      <FireLedger appletId={a.id} initial={ledger} />

      <section className="card mb-4">
        <h2 className="mb-2 text-base font-semibold">Send test event</h2>
        <TestEventForm appletId={a.id} triggerType={a.trigger_type} sample={trigger?.sample ?? {}} />
      </section>

      <section className="card mb-4" id="dry-run">
        <h2 className="mb-1 text-base font-semibold">Test without sending</h2>
        <p className="mb-2 text-sm text-slate-600">Runs the applet on an event with every action recorded instead of sent: the requests, the file a note would write, the email. Nothing leaves this server and nothing is stored.</p>
        <DryRun appletId={a.id} sample={trigger?.sample ?? {}} canFetch={triggerRegistry.get(a.trigger_type)?.preview !== undefined} />
      </section>

      <section className="card mb-4" id="alerts">
        <h2 className="mb-2 text-base font-semibold">Alerts</h2>
        <AppletAlertsForm appletId={a.id} initial={a.alerts} actions={channelActions} settingsChannel={settingsChannel} />
      </section>

      {planned ? <PlannedRuns appletId={a.id} actionLabels={Object.fromEntries(meta.actions.map((x) => [x.type, x.label]))} initial={planned} /> : null}

      <section className="mb-6">
        <div className="mb-2 flex items-baseline justify-between">
          <h2 className="text-base font-semibold">Last 50 runs</h2>
          <Link href={`/runs?applet_id=${encodeURIComponent(a.id)}`} className="text-sm text-indigo-700 hover:underline">
            All runs of this applet
          </Link>
        </div>
        <RunsTable initial={runs} query={{ applet_id: a.id }} showApplet={false} emptyText="No runs yet. Send a test event above, or fire the trigger." />
      </section>

      <AppletHistory appletId={a.id} versions={versions} selected={selectedVersion ?? (restored ? restored : undefined)} />

      <section id="definition">
        <h2 className="mb-2 text-base font-semibold">
          Definition <span className="text-sm font-normal text-slate-500">· version {a.version}</span>
        </h2>
        {/* A step list with a linear form opens as the simple two-step flow; any other as its steps. */}
        <AppletEditor key={restored ? `restored-${restored}` : "editor"} meta={meta} secrets={secrets} applet={{ id: a.id, name: a.name, definition: a.definition }} />
      </section>
    </div>
  );
}

type Detail = NonNullable<Awaited<ReturnType<typeof appletDetail>>>;

function AppletHeader({ a }: { a: Detail }) {
  return (
    <header className="mb-4 flex flex-wrap items-center justify-between gap-3">
      <div className="flex min-w-0 items-center gap-3">
        <h1 className="truncate text-xl font-semibold" data-testid="applet-name">
          {a.name}
        </h1>
        <span className="inline-flex items-center gap-1.5">
          <PluginIcon kind="trigger" type={a.trigger_type} />
          <span className="text-slate-400">→</span>
          {a.action_types.map((t, i) => (
            <PluginIcon key={i} kind="action" type={t} />
          ))}
        </span>
        <EnabledToggle id={a.id} enabled={a.enabled} name={a.name} />
      </div>
      <div className="flex items-center gap-2">
        <a href={`/api/export?applet_id=${encodeURIComponent(a.id)}`} className="btn-secondary" download>
          Export JSON
        </a>
        <DuplicateAppletButton id={a.id} />
        <DeleteAppletButton id={a.id} name={a.name} />
      </div>
    </header>
  );
}

/** How the applet is fired (its webhook URL or inbound address), its counters, tags and the trigger's last error. */
function TriggerSection({ a, meta, trigger, feed }: { a: Detail; meta: Meta; trigger: MetaTrigger | undefined; feed: RegisteredTrigger["feed"] | undefined }) {
  const state = a.trigger_state;
  const aliasValue = a.definition.trigger.config.to_alias;
  const alias = typeof aliasValue === "string" && aliasValue.trim() ? aliasValue.trim().toLowerCase() : "";
  const inbound = alias ? `${alias}@${meta.inbound_domain}` : `*@${meta.inbound_domain}`;
  return (
    <section className="card mb-4 flex flex-col gap-3 text-sm">
      {feed === "http" ? (
        <div>
          <p className="field-label mb-1">Webhook URL</p>
          <div className="flex items-center gap-2">
            <input readOnly value={a.webhook_url} aria-label="Webhook URL" className="input font-mono text-xs" data-testid="webhook-url" />
            <CopyButton text={a.webhook_url} />
          </div>
          <p className="help">POST JSON, a form, or text; GET with query parameters works too. Anyone with this URL can fire the applet.</p>
          <WebhookCurl appletId={a.id} triggerType={a.trigger_type} url={a.webhook_url} builtin={trigger?.sample ?? {}} />
        </div>
      ) : null}
      {a.trigger_type === "email" ? (
        // Where to send mail, at the top as a webhook's URL is: the thing a user needs first.
        <div data-testid="inbound-address">
          <p className="field-label mb-1">Inbound address</p>
          <div className="flex items-center gap-2">
            <input readOnly value={inbound} aria-label="Inbound address" className="input font-mono text-xs" />
            <CopyButton text={inbound} />
          </div>
          <div className="mt-2">
            <InboundAddress meta={meta} alias={alias} />
          </div>
        </div>
      ) : null}
      <dl className="grid grid-cols-2 gap-x-6 gap-y-2 md:grid-cols-4">
        <AppletCounters appletId={a.id} initial={{ last_fired_at: a.last_fired_at, run_count: a.run_count }} />
        {state?.next_run_at !== undefined && feed === "polled" ? (
          <div>
            <dt className="text-xs text-slate-500">Next check</dt>
            <dd>{a.enabled ? <LocalTime iso={state?.next_run_at} relative /> : "disabled"}</dd>
          </div>
        ) : null}
        {state?.last_polled_at ? (
          <div>
            <dt className="text-xs text-slate-500">Last checked</dt>
            <dd>
              <LocalTime iso={state.last_polled_at} />
            </dd>
          </div>
        ) : null}
      </dl>
      <AppletTagsEditor id={a.id} tags={a.tags} />
      {state?.last_error ? (
        <div className="rounded-md bg-red-50 p-3 text-red-900 ring-1 ring-red-200" data-testid="trigger-error">
          <p className="font-semibold">Last trigger error{state.error_count > 1 ? ` (${state.error_count} in a row)` : ""}</p>
          <p className="mt-1 font-mono text-xs break-words">{state.last_error}</p>
        </div>
      ) : null}
    </section>
  );
}

/** The Upcoming list's first render: the same reads GET /api/applets/:id/planned answers, so its reloads match. */
async function plannedLists(app: ReturnType<typeof services>["app"], appletId: string): Promise<PlannedLists> {
  const [pending, cancelled, skipped] = await Promise.all([
    plannedOf(app, appletId, { status: "pending", limit: UPCOMING_LIMIT }),
    plannedOf(app, appletId, { status: "cancelled", limit: RECENT_LIMIT }),
    plannedOf(app, appletId, { status: "skipped", limit: RECENT_LIMIT }),
  ]);
  return plannedListsOf(pending?.items ?? [], [...(cancelled?.items ?? []), ...(skipped?.items ?? [])]);
}
