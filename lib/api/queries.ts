import { quietApplets } from "../fires/check";
import type { AlertRow, ApiTokenRow } from "../db/store/types";
import type { AlertChannel } from "../alerts/policy";
import type { App } from "../app";
import { actionFacts, actionRegistry } from "../actions";
import { channelActions } from "../alerts/channel";
import type { Applet, AppletVersion, RunListFilter } from "../db/store";
import { createCredentialMasks, pluginFields } from "../applets/credential-masks";
import { credentialSpots, literalCredentials, PURGED_CREDENTIAL } from "../applets/credentials";
import { authorText, changeSummary } from "../applets/versions";
import { storedDefinition } from "../definition";
import { holdsLaneWhileWaiting } from "../definition/controls";
import { topLevelActions } from "../definition/types";
import { triggerRegistry } from "../triggers";
import { overdueMs } from "../core/overdue";
import { actionTypesOf, runRow } from "./serialize";

/**
 * The read side of the API, in the JSON shapes the browser sees. The routes answer with these and
 * the server-rendered pages call them directly, so a screen and its reload through the API cannot
 * drift apart. They are async so that the stores can become async without changing a caller.
 */

type Reads = Pick<App, "config" | "clock" | "store" | "secrets">;

/** How many replays a run's page lists under the original. */
export const REPLAYS_SHOWN = 20;

/** GET /api/meta: the plug-in catalog the editor builds its forms from, and the settings page's facts. */
export async function meta(app: Pick<App, "config">) {
  return {
    public_url: app.config.publicUrl,
    inbound_domain: app.config.inboundDomain,
    smtp_inbound_port: app.config.smtpInboundPort,
    // What each action plug-in tells about this install (the notes folder, the sheets service account).
    ...actionFacts(app),
    // The AI transform hint.
    ai_configured: Boolean(app.config.openrouterApiKey),
    triggers: [...triggerRegistry.values()].map((t) => ({
      type: t.type,
      label: t.label,
      description: t.description,
      fields: t.fields,
      ingredients: t.ingredients,
      sample: t.sample,
      can_fetch: t.preview !== undefined,
      // The editor's button for it: "Fetch now" for a feed, "Test connection" for a mailbox or a broker.
      fetch_label: t.previewLabel ?? "Fetch now",
    })),
    actions: [...actionRegistry.values()].map((a) => ({
      type: a.type,
      label: a.label,
      description: a.description,
      fields: a.fields,
      available: a.available ? a.available(app) : true,
    })),
  };
}

/**
 * The alert channels the Settings and applet forms offer: each action that declares `alert`, as
 * GET /api/meta lists it, with its channel's label, help and the message fields whenthen writes.
 */
export function alertChannelOptions(m: Meta) {
  return channelActions().flatMap((c) => {
    const action = m.actions.find((a) => a.type === c.type);
    return action ? [{ ...action, channel: { label: c.alert.label, help: c.alert.help ?? null, message_fields: [...c.alert.messageFields] } }] : [];
  });
}

function summary(a: Applet) {
  return {
    id: a.id,
    name: a.name,
    enabled: a.enabled,
    trigger_type: a.triggerType,
    action_types: actionTypesOf(a),
    last_fired_at: a.lastFiredAt,
    run_count: a.runCount,
    tags: a.tags,
    version: a.version,
    created_at: a.createdAt,
    updated_at: a.updatedAt,
    // Set while auto-pause has disabled the applet (cleared on enable); the list and
    // "needs attention" read them.
    paused_reason: a.pausedReason,
    paused_at: a.pausedAt,
    failure_streak: a.failureStreak,
  };
}

/** An applet's alert choices as the API shows them: `default` follows Settings. */
export function appletAlertsOf(a: Applet): { channel: "default" | "none" | AlertChannel; auto_pause: "default" | "on" | "off" } {
  const channel = a.alertChannel === null ? "default" : "mode" in a.alertChannel ? "none" : a.alertChannel;
  return { channel, auto_pause: a.autoPause === null ? "default" : a.autoPause ? "on" : "off" };
}

/** An alert as Settings lists it (the provider's answer is stored redacted). */
export const alertRow = (a: AlertRow) => ({
  id: a.id,
  applet_id: a.appletId,
  applet_name: a.appletName,
  kind: a.kind,
  run_id: a.runId,
  error: a.error,
  status: a.status,
  channel_type: a.channelType,
  provider_answer: a.providerAnswer,
  dispatched_at: a.dispatchedAt,
  sent_at: a.sentAt,
  created_at: a.createdAt,
});

/** GET /api/settings/alerts: the channel, the window, the thresholds and the latest alerts. */
export async function alertSettingsView(app: Pick<App, "store" | "config">, view: CredentialView = { masked: false }) {
  const s = await app.store.alerts.settings();
  const recent = await app.store.alerts.recent(20);
  return {
    channel: view.masked && s.channel ? masksOf(app).maskChannel(s.channel) : s.channel,
    window_minutes: s.windowMinutes,
    trigger_threshold: s.triggerThreshold,
    auto_pause: s.autoPause,
    auto_pause_after: s.autoPauseAfter,
    alert_on_retry: s.alertOnRetry,
    updated_at: s.updatedAt,
    recent: await Promise.all(recent.map(async (a) => ({ ...alertRow(a), folded: await app.store.alerts.foldedCount(a.id) }))),
  };
}

/**
 * GET /api/applets: every applet with its last 24 h of runs and its trigger's health (the last
 * check's error, an overdue next check): three reads for the whole list, whatever its length.
 */
export async function appletList(app: Reads) {
  const now = app.clock.now();
  const since = new Date(now.getTime() - 86_400_000).toISOString();
  const [runStats, triggers, applets] = await Promise.all([app.store.runs.statsByApplet(since), app.store.triggerState.overview(), app.store.applets.list()]);
  const { quiet } = await quietApplets(app, now, applets);
  const stats = new Map(runStats.map((s) => [s.applet_id, s]));
  const trigger = new Map(triggers.map((t) => [t.appletId, t]));
  return applets.map((a) => {
    const t = trigger.get(a.id);
    return {
      ...summary(a),
      runs_24h: Number(stats.get(a.id)?.runs_24h ?? 0),
      failed_24h: Number(stats.get(a.id)?.failed_24h ?? 0),
      last_run_status: stats.get(a.id)?.last_status ?? null,
      last_run_at: stats.get(a.id)?.last_at ?? null,
      trigger_error: t?.lastError ?? null,
      next_check_at: t?.nextRunAt ?? null,
      // A disabled applet is not checked: its next check is never late.
      next_check_overdue_ms: a.enabled ? overdueMs(t?.nextRunAt ?? null, now) : null,
      // Expected activity: why it is quiet (no event for longer than expected, a slot not taken), or null.
      quiet: quiet.get(a.id)?.text ?? null,
    };
  });
}

/**
 * Who reads a view with credentials in it: `masked` for an API token (a script, a read-only
 * dashboard, the CLI's export): its literal credentials become "[hidden credential …]". The
 * signed-in owner reads the current definition as written in the editor.
 */
export interface CredentialView {
  masked: boolean;
}

const masksOf = (app: Pick<App, "config">) => createCredentialMasks(app.config.sessionSecret);

/** An applet as GET /api/applets/:id and every write to it answer: its definition, webhook URL and trigger state. */
export async function appletDetailOf(app: Pick<App, "config" | "store">, a: Applet, view: CredentialView = { masked: false }) {
  const state = await app.store.triggerState.get(a.id);
  const masks = view.masked ? masksOf(app) : null;
  const alerts = appletAlertsOf(a);
  return {
    ...summary(a),
    // Stored only after lib/definition validated it.
    definition: storedDefinition(masks ? masks.mask(a.definition) : a.definition),
    webhook_token: a.webhookToken,
    alerts: masks && typeof alerts.channel === "object" ? { ...alerts, channel: masks.maskChannel(alerts.channel) } : alerts,
    webhook_url: `${app.config.publicUrl}/api/hooks/${a.id}/${a.webhookToken}`,
    trigger_state: state
      ? { next_run_at: state.nextRunAt, last_polled_at: state.lastPolledAt, last_error: state.lastError, error_count: state.errorCount, seen_keys: state.seenKeys.length, last_value: state.lastValue }
      : null,
  };
}

/** GET /api/applets/:id; null when there is no such applet. */
export async function appletDetail(app: Reads, id: string, view?: CredentialView) {
  const a = await app.store.applets.get(id);
  return a ? await appletDetailOf(app, a, view) : null;
}

/**
 * A version as the history lists it: who, when, how, and what it changed against the one before
 * (`summary`); which credentials it holds written literally (their names, for "Purge"), and
 * whether some were purged.
 */
function versionRow(v: AppletVersion, previous: AppletVersion | null) {
  return {
    version: v.version,
    name: v.name,
    enabled: v.enabled,
    source: v.source,
    restored_from: v.restoredFrom,
    author: { kind: v.author.kind, id: v.author.id, label: v.author.label, text: authorText(v.author) },
    created_at: v.createdAt,
    summary: changeSummary(previous, v),
    literal_credentials: literalCredentials(v.definition, pluginFields).map((c) => c.label),
    credentials_purged: credentialSpots(v.definition, pluginFields).some((c) => c.value === PURGED_CREDENTIAL),
  };
}

/** GET /api/applets/:id/versions: every version, newest first; null when there is no such applet. */
export async function appletVersions(app: Reads, id: string) {
  if (!(await app.store.applets.get(id))) return null;
  const all = await app.store.applets.versions(id);
  return all.map((v, i) => versionRow(v, all[i + 1] ?? null));
}

/**
 * GET /api/applets/:id/versions/:n: one version with its definition, its literal credentials
 * masked for every reader (a version is history, never edited; restore works from the stored one);
 * null when the applet or the version does not exist.
 */
export async function appletVersion(app: Reads, id: string, n: number) {
  const v = await app.store.applets.version(id, n);
  if (!v) return null;
  const previous = n > 1 ? await app.store.applets.version(id, n - 1) : null;
  const current = await app.store.applets.get(id);
  return { ...versionRow(v, previous), definition: storedDefinition(masksOf(app).mask(v.definition)), current: current?.version === v.version };
}

/** GET /api/runs: a page of runs, newest first, each with its applet's name. */
export async function runsPage(app: Reads, filter: RunListFilter) {
  const page = await app.store.runs.list(filter);
  const names = new Map((await app.store.applets.list()).map((a) => [a.id, a.name]));
  // A search that stopped at its bound says where (the page may be short; next_cursor continues).
  return { runs: page.runs.map((r) => runRow(r, names.get(r.appletId) ?? null)), next_cursor: page.nextCursor, search_stopped_at: page.searchStoppedAt ?? null };
}

/** GET /api/applets/:id/planned: the applet's planned runs, by due time; null when there is no such applet. */
export async function plannedOf(app: Reads, appletId: string, opts: { status?: string; limit: number }) {
  const applet = await app.store.applets.get(appletId);
  if (!applet) return null;
  // A planned run's actionIndex counts the top-level actions (the only ones a timing may sit on).
  const actions = topLevelActions(storedDefinition(applet.definition));
  const rows = await app.store.plannedRuns.list(appletId, opts);
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    items: rows.map((r) => ({
      id: r.id,
      actionIndex: r.actionIndex,
      actionType: actions[r.actionIndex]?.type ?? null,
      dueAt: iso(r.dueAt),
      status: r.status,
      reason: r.reason,
      originalDueAt: iso(r.originalDueAt),
      explanation: r.note ?? "",
      subjectId: r.subjectId,
      subjectVersion: r.subjectVersion,
      contactId: r.contactId,
      eventId: r.eventId,
      // Every planned run has its row in the run log, with the same id (planned, cancelled, skipped, then executed).
      runId: r.id,
    })),
  };
}

/**
 * Whether the applet's later runs wait behind a waiting run (controls.order "strict"): all of
 * them ("in_order"), those with the same concurrency key ("per_key"), or none (null).
 */
function strictOrderOf(definition: unknown): "in_order" | "per_key" | null {
  const controls = storedDefinition(definition).controls;
  if (!holdsLaneWhileWaiting(controls)) return null;
  return controls?.concurrency?.mode === "per_key" ? "per_key" : "in_order";
}

/** GET /api/runs/:id: the run with its steps, its event and its applet; null when there is no such run. */
export async function runDetail(app: Reads, id: string) {
  const run = await app.store.runs.get(id);
  if (!run) return null;
  const event = await app.store.runs.event(run.eventId);
  const applet = await app.store.applets.get(run.appletId);
  // The link between a replay and its original: the event's first run is the original (or the
  // oldest retention kept), every later one a replay of it.
  // One more than shown, so the page can say "more than 20".
  const ofEvent = await app.store.runs.ofEvent(run.eventId, REPLAYS_SHOWN + 2);
  const original = ofEvent[0] && ofEvent[0].id !== run.id ? ofEvent[0] : null;
  const link = (r: { id: string; status: string; createdAt: string }) => ({ id: r.id, status: r.status, created_at: r.createdAt });
  return {
    run: { ...runRow(run, applet?.name ?? null), steps: run.steps },
    replay_of: original ? link(original) : null,
    replays: original ? [] : ofEvent.slice(1).map(link),
    event: event && { id: event.id, applet_id: event.appletId, source: event.source, dedupe_key: event.dedupeKey, payload: event.payload, received_at: event.receivedAt },
    applet: applet ? { id: applet.id, name: applet.name, strict_order: strictOrderOf(run.status === "waiting" ? await definitionRunWith(app, run, applet.definition) : applet.definition) } : null,
  };
}

/**
 * The definition the run's last claim executed (the version it recorded): whether a waiting run
 * holds its lane was decided from it when it parked, and a save since then does not change that.
 */
async function definitionRunWith(app: Reads, run: { appletId: string; appletVersion: number | null }, current: unknown): Promise<unknown> {
  if (run.appletVersion === null) return current;
  return (await app.store.applets.version(run.appletId, run.appletVersion))?.definition ?? current;
}

/**
 * A timed run's plan, for its run page: the explanation in words (a no_anchor run's names the
 * path and the value), the record and the due time before quiet hours moved it. null when the run
 * was not planned.
 */
export async function plannedRunNote(app: Reads, id: string) {
  const r = await app.store.plannedRuns.get(id);
  if (!r) return null;
  return {
    explanation: r.note ?? "",
    subjectId: r.subjectId,
    subjectVersion: r.subjectVersion,
    originalDueAt: r.originalDueAt === null ? null : new Date(r.originalDueAt).toISOString(),
  };
}

/** GET /api/secrets: names and dates; a value never leaves the server. */
export async function secretList(app: Pick<App, "secrets">) {
  return (await app.secrets.list()).map((s) => ({ name: s.name, created_at: s.createdAt, updated_at: s.updatedAt }));
}

/** API tokens as lists show them: name, prefix, last use, expiry; never the value or its hash. */
export async function tokenList(app: Pick<App, "store" | "clock">) {
  const now = app.clock.now();
  return (await app.store.apiTokens.list()).map((t) => tokenRow(t, now));
}

/** `expired`: past its expires_at at `now` (it is refused; it stays listed until revoked). */
export const tokenRow = (t: ApiTokenRow, now: Date) => ({
  id: t.id,
  name: t.name,
  prefix: t.prefix,
  read_only: t.readOnly,
  last_used_at: t.lastUsedAt,
  expires_at: t.expiresAt,
  expired: t.expiresAt !== null && Date.parse(t.expiresAt) <= now.getTime(),
  created_at: t.createdAt,
});

export type Meta = Awaited<ReturnType<typeof meta>>;
export type MetaTrigger = Meta["triggers"][number];
export type MetaAction = Meta["actions"][number];
export type MetaChannel = ReturnType<typeof alertChannelOptions>[number];
export type AppletListItem = Awaited<ReturnType<typeof appletList>>[number];
export type AppletDetail = ReturnType<typeof appletDetailOf>;
export type RunRow = Awaited<ReturnType<typeof runsPage>>["runs"][number];
export type RunDetail = NonNullable<Awaited<ReturnType<typeof runDetail>>>;
export type TokenRow = ReturnType<typeof tokenRow>;
export type VersionListItem = NonNullable<Awaited<ReturnType<typeof appletVersions>>>[number];
export type VersionDetail = NonNullable<Awaited<ReturnType<typeof appletVersion>>>;
export type AlertSettingsView = Awaited<ReturnType<typeof alertSettingsView>>;
export type AppletAlerts = ReturnType<typeof appletAlertsOf>;
