/**
 * The store seam: everything the app keeps, as async interfaces, one per aggregate, and
 * a unit of work for the writes that must commit together. Two implementations pass one contract
 * suite (tests/contract/store.ts): SQLite (lib/db/store/sqlite, the default) and PostgreSQL.
 *
 * Only a store writes SQL or knows its dialect. Everything above (ingress, queue loop, scheduler,
 * executor, API, pages, scripts) talks to `Store`.
 *
 * Conventions every method follows (the contract suite checks them):
 * - Timestamps cross the seam as ISO 8601 UTC strings with milliseconds (`Date#toISOString()`),
 *   or as `Date` where the argument is "now"; they are stored so that they sort and compare as
 *   those strings (SQLite: text; PostgreSQL: a store may use timestamptz but must hand back the
 *   same `toISOString()` text it was given, millisecond precision).
 * - JSON columns (definition, payload, steps, seen_keys, last_value) go in as values (or, on the
 *   ingest hot path, as already-serialized text) and come back parsed.
 * - "false" / `null` returns mean "nothing matched" (a lost claim, an unknown id), never an error.
 *   A method throws only when the database itself failed (disk full, connection lost, constraint
 *   broken in a way the method does not document): the error is the driver's, with its code, so
 *   lib/core/faults can tell a full disk (SQLite `SQLITE_FULL`, PostgreSQL `53100`) from a bug.
 * - Every method resolves only after its write is committed (or, inside `transaction`, is part of
 *   the transaction that commits or rolls back as a whole). A claim that was not committed is
 *   never returned (nothing executes without a committed claim).
 */
import type { applets, events, jobLocks, runs, users, workers } from "../schema";
import type { RunStatus, Step } from "./types/runs";
import type { TriggerState } from "./types/trigger-state";
import type { CancelInstruction, CountRecentQuery, PlannedRun as LibPlannedRun, Run as LibRun } from "@vibedout/automations/types";
import type { AlertKind, AlertSettings, AlertStatus, AppletAlertChannel, NewAlert } from "./types/alerts";

// ---------------------------------------------------------------------------------------------
// Row types: derived once from the Drizzle schema (lib/db/schema.ts). JSON columns are typed by
// what they hold; integer booleans become booleans.
// ---------------------------------------------------------------------------------------------

type AppletColumns = typeof applets.$inferSelect;
type RunColumns = typeof runs.$inferSelect;
type EventColumns = typeof events.$inferSelect;
type UserColumns = typeof users.$inferSelect;
type WorkerColumns = typeof workers.$inferSelect;
type JobLockColumns = typeof jobLocks.$inferSelect;

/** An applet: the whole definition as one JSON document (validated by lib/definition on the way in). */
export type Applet = Omit<AppletColumns, "enabled" | "definition" | "tags" | "alertOpen" | "triggerAlertOpen" | "alertChannel" | "autoPause" | "listenUntil"> & {
  enabled: boolean;
  definition: Record<string, unknown>;
  /** Short labels, as lib/applets/tags normalised them; [] when none. */
  tags: string[];
  /** Its current version (the highest in applet_versions, read with the row); 0 only for a row no store method wrote. */
  version: number;
  /** A failure alert went out and no run succeeded since (a recovery notice is due). */
  alertOpen: boolean;
  triggerAlertOpen: boolean;
  /** null: the Settings channel; `{ mode: "none" }`: no alerts; or a channel of its own. */
  alertChannel: AppletAlertChannel;
  /** null: the Settings default. */
  autoPause: boolean | null;
};

/** Who saved a version: a signed-in user, an API token, or whenthen itself (a script, the migration). The label is kept as it was then. */
export interface VersionAuthor {
  kind: "user" | "token" | "system";
  id: string | null;
  /** The user's email or the token's name at the time of the save. */
  label: string;
}

/** How a version came to be. `backfill`: the first version the migration made of an applet saved before version history. */
export type VersionSource = "create" | "save" | "restore" | "import" | "duplicate" | "backfill";

/** One saved version of an applet: what was saved, who saved it, when, and how. */
export interface AppletVersion {
  appletId: string;
  version: number;
  name: string;
  enabled: boolean;
  definition: Record<string, unknown>;
  source: VersionSource;
  /** With source `restore`: the version it restored. */
  restoredFrom: number | null;
  author: VersionAuthor;
  createdAt: string;
}

/** The author of a save nobody made through the API (seed script, benches, tests of the store). */
export const SYSTEM_AUTHOR: VersionAuthor = { kind: "system", id: null, label: "whenthen" };

/**
 * What `applets.insert` / `applets.update` write. `now` is updated_at (and created_at unless given).
 * Each also stores the next version (name, enabled, definition as written) with `author`
 * (default SYSTEM_AUTHOR) and `source` (default `create` / `save`), in the same transaction.
 */
export interface AppletInsert {
  id: string;
  name: string;
  enabled: boolean;
  triggerType: string;
  definition: unknown;
  webhookToken: string;
  now: string;
  createdAt?: string;
  /** Insert: [] when absent. Update: absent keeps the stored tags. */
  tags?: string[];
  author?: VersionAuthor;
  source?: VersionSource;
  restoredFrom?: number | null;
}

/** The four columns the webhook hot path reads. `definition` is the stored JSON text (parsed lazily by the ingress). */
export interface HookApplet {
  id: string;
  enabled: boolean;
  webhookToken: string;
  definition: string;
  /** "Listen for test event": until this time (ISO) the next request is kept as a sample; null when not listening. */
  listenUntil: string | null;
}

/** A run as the app sees it; the claim token is only ever handed to the claimer (`ClaimedRun`). */
export type Run = Omit<RunColumns, "status" | "steps" | "claimToken" | "lane" | "holdsLane"> & {
  status: RunStatus;
  steps: Step[];
  /** Set when the stored steps could not be read; `steps` is then empty (the executor fails the run with it). */
  stepsError?: string;
};

/** What the executor needs of a run's applet. */
export type ClaimedApplet = Pick<Applet, "id" | "name" | "definition" | "version" | "updatedAt">;

/** A run this worker claimed: `claimToken` fences every settle below. */
export interface ClaimedRun extends Run {
  claimToken: string;
  /** The run's event, read with the claim (on PostgreSQL in its statement); null when it is gone with its applet. */
  event: StoredEvent | null;
  /**
   * The run's applet as the claim saw it, at the version the claim recorded (`appletVersion`);
   * null when it is gone. A save after the claim makes a newer version and leaves this run alone.
   */
  applet: ClaimedApplet | null;
  /** Set when the stored payload or definition could not be read (the executor fails the run with it). */
  readError?: string;
  /**
   * Whether this run is a replay, asked with the claim: its created_at differs from its event's
   * received_at, or the same event has an earlier run (created_at, then id). A replay's
   * idempotency keys carry its own id (lib/executor).
   */
  replay: boolean;
}


export type StoredEvent = Pick<EventColumns, "id" | "appletId" | "source" | "dedupeKey" | "receivedAt"> & {
  payload: Record<string, unknown>;
};

/** A terminal status: what `finish` may set. */
export type FinalStatus = Exclude<RunStatus, "queued" | "running" | "waiting">;

export interface IngestInput {
  appletId: string;
  source: string;
  /** Unique per applet when not null: a second event with the same key inserts nothing. */
  dedupeKey: string | null;
  /** Already capped (lib/core/limits capJson) and serialized: the hot path serializes once. */
  payloadJson: string;
  /** The event's received_at; also the run's created_at, updated_at and first next_attempt_at. */
  receivedAt: string;
  maxAttempts: number;
  /** An id chosen by the caller (email attachments are saved under the event id before ingest). */
  eventId?: string;
  /**
   * The timed runs @vibedout/automations planned for this event, written in the same
   * transaction as the event, and only when the event itself was (a duplicate dedupe key writes
   * neither). Its runs' `eventId` is `eventId` above, which the caller then sets.
   */
  plan?: PlanWrite;
  /** The applet's controls over runs, when not the default (lib/definition/controls.ts): the store's run-controls part ingests it. */
  controls?: IngestControls;
}

/** What the store does with one event of an applet whose controls over runs are not the default. */
export interface IngestControls {
  /** The run's lane: one run runs at a time per (applet, lane); '' is the applet's one lane. */
  lane: string;
  /** A rate limit: the run starts no earlier than its slot (`wait`), or is stored skipped when it would have to wait (`drop`). */
  rate?: { max: number; periodMs: number; overflow: "wait" | "drop" };
  /** A debounce window: the event joins the run an earlier event opened within it, or opens one due at its end. */
  debounceMs?: number;
}

/** An ingested event and its queued run; null when the dedupe key was already taken. */
export type Ingested = { eventId: string; runId: string } | null;

/** A running run handed back to the queue because its worker's lease expired or it was stuck. */
export interface RecoveredRun {
  id: string;
  appletId: string;
  lockedBy: string | null;
  /**
   * `lease`: its worker stopped renewing (or has no row); `gone`: its worker's process or session
   * was seen gone (lib/queue/liveness.ts); `orphan`: the caller's own run that none of its slots
   * holds (a claim whose answer a cut connection lost); `stuck`: locked past the stuck bound.
   */
  reason: "lease" | "gone" | "orphan" | "stuck";
}

/** The alert settings as saved. */
export type SavedAlertSettings = Omit<AlertSettings, "updatedAt" | "alertOnRetry"> & { alertOnRetry?: boolean };

/** How a manual retry changes the run beyond queuing it again (`RunsStore.retry`). */
export interface RetryOptions {
  steps?: Step[];
  attempt?: number;
  at?: Date;
}

export interface RunListFilter {
  appletId?: string;
  /** A stored status, or as shown: `retrying` (queued after a failed attempt); `queued` is then the runs not yet tried. */
  status?: string;
  /** A timed run's reason (superseded, late, …). */
  reason?: string;
  /** created_at >= from (ISO). */
  from?: string;
  /** created_at <= to (ISO). */
  to?: string;
  /** Opaque cursor from a previous page (`nextCursor`). */
  cursor?: string;
  /** Page size, clamped to 1..200; default 50. */
  limit?: number;
  /** Runs whose error contains this text (case-insensitive for ASCII letters). */
  errorText?: string;
  /** Runs whose event payload (its stored JSON text, first `RUN_SEARCH_PAYLOAD_BYTES`) contains this text (case-insensitive for ASCII letters). */
  payloadText?: string;
  /** How many runs a search looks at (1..RUN_SEARCH_SCAN, the default): tests make the bound small. */
  searchScan?: number;
}

/**
 * A search (errorText / payloadText) is bounded: one page looks at no more than the newest
 * `RUN_SEARCH_SCAN` runs that match the other filters (after the cursor), and reads at most the
 * first `RUN_SEARCH_PAYLOAD_BYTES` of each payload, so its cost does not grow with the table.
 * When that bound is reached before the page fills, the page says where it stopped
 * (`searchStoppedAt`) and `nextCursor` continues from there.
 */
export const RUN_SEARCH_SCAN = 2000;
export const RUN_SEARCH_PAYLOAD_BYTES = 65536;

/** A page of `runs.list`. */
export interface RunPage {
  runs: Run[];
  nextCursor: string | null;
  /** Set when a search stopped at its bound: the created_at of the oldest run it looked at (nextCursor continues there). */
  searchStoppedAt?: string;
}

/** A run of an event, as the link between a replay and its original shows it. */
export interface EventRun {
  id: string;
  status: RunStatus;
  createdAt: string;
}

/** One run change for the SSE stream. */
export interface RunChange {
  id: string;
  applet_id: string;
  status: string;
  updated_at: string;
}

/** Per applet: runs created since `since`, and the latest run's status and created_at. */
export interface AppletRunStats {
  applet_id: string;
  runs_24h: number;
  /** Of those, the runs that ended failed or dead. */
  failed_24h: number;
  /** As shown (lib/ui/run-status): `retrying` for a queued run after a failed attempt. */
  last_status: string | null;
  last_at: string | null;
}

/** A polled applet with a next_run_at (the scheduler's view, lib/scheduler/store). */
export interface ScheduledApplet {
  applet_id: string;
  trigger_type: string;
  /** The stored definition JSON text (an unreadable one must not stop the listing). */
  definition: string;
  enabled: boolean;
  /** The stored text, exactly: `claimDue` compares it as stored. */
  next_run_at: string;
  error_count: number;
  created_at: string;
  updated_at: string;
}

export interface PendingSlot {
  applet_id: string;
  trigger_type: string;
  pending_slot: string;
}

/** What the store says about the queue for GET /metrics and the Settings Health panel. */
export interface RunTally {
  /** Runs per applet and status: those created since `since`, and every queued and running one whatever its age. */
  byApplet: { appletId: string; status: string; count: number }[];
  /** Runs waiting in the queue (due now or for a later retry). */
  queued: number;
  /** The oldest next_attempt_at (created_at when it has none) of a queued run that is due at `now`; null when none is due. */
  oldestDueAt: string | null;
}

/** A polled applet's trigger as the applets list shows it: its last error and when its next check is due. */
export interface TriggerOverview {
  appletId: string;
  lastError: string | null;
  errorCount: number;
  nextRunAt: string | null;
  lastPolledAt: string | null;
}

/** An applet whose trigger's last check failed, with that error (the applets list's "needs attention"). */
export interface TriggerError {
  appletId: string;
  lastError: string;
}

/** An event as the editor's sample picker shows it: payload parsed. */
export interface RecentEvent {
  id: string;
  source: string;
  receivedAt: string;
  payload: Record<string, unknown>;
}

/** A planned run as the planner made it, with what the app adds: its applet, the action it runs, why (plain words). */
export interface PlannedRunInsert extends LibPlannedRun {
  appletId: string;
  actionIndex: number;
  /** The plan's explanation ("moved from 22:00 by quiet hours", a no_anchor warning); kept on the run. */
  note: string | null;
  /** The due time before quiet hours moved it; null when not moved. */
  originalDueAt: number | null;
  /** The max attempts of its row in `runs`. */
  maxAttempts: number;
}

/** @vibedout/automations' Plan with the app's runs: cancel older versions, insert the runs, record the version. */
export interface PlanWrite {
  runs: PlannedRunInsert[];
  cancel: CancelInstruction | null;
  /** The version the subject reaches (recorded so older events plan nothing); null records none. */
  subject: { key: string; version: number } | null;
  /** Epoch ms the writes are stamped with. */
  at: number;
}

/** A planned run as stored: the library's Run (times in epoch ms) with the app's columns. */
export interface StoredPlannedRun extends Omit<LibRun, "action" | "params" | "messageId"> {
  appletId: string;
  actionIndex: number;
  note: string | null;
  originalDueAt: number | null;
}

/** A planned run a sweep claimed (status running, token and lease set). */
export interface ClaimedPlannedRun extends StoredPlannedRun {
  status: "running";
  claimToken: string;
  leaseUntil: number;
}

export type User = UserColumns;

export interface NewUser {
  id: string;
  /** Stored as given; lib/auth normalises (trim, lower case) before it gets here. */
  email: string;
  passwordHash: string;
  now: string;
}

export type JobLock = JobLockColumns;

export type WorkerRow = Omit<WorkerColumns, "updatedAt">;

export interface Heartbeat {
  id: string;
  hostname: string;
  pid: number;
  now: Date;
  leaseMs: number;
  fault: string | null;
  /** The port its SMTP receiver listens on; null (or absent) when it runs none. */
  smtpPort?: number | null;
  /** Its in-memory counters (lib/metrics `snapshot`), stored as given; null (or absent): none. */
  metrics?: string | null;
  /** The machine and pid namespace in which `pid` names it (lib/queue/liveness.ts); null (or absent): none said. */
  processScope?: string | null;
  /** PostgreSQL: the key of the session-level advisory lock it holds now; null (or absent): none. */
  sessionLock?: number | null;
}

/**
 * PostgreSQL: a session of the worker's own that holds a session-level advisory lock for the
 * worker's life. The server releases the lock the moment the session ends (the process was killed,
 * its host died), which another worker sees without waiting for the lease (lib/queue/liveness.ts).
 */
export interface LivenessSession {
  /** The lock's key while this session holds it; null while the session is down (it reconnects). */
  key(): number | null;
  /** Date.now() when this session last took its lock (held since without a break); null while down. */
  heldSince(): number | null;
  /** Which of `keys` no session holds now (the sessions that held them ended); null while this session is down. */
  free(keys: number[]): Promise<number[] | null>;
  close(): Promise<void>;
}

export interface RecoverStaleOptions {
  now: Date;
  stuckBefore: Date;
  /** The caller's worker id: its runs are judged by the stuck bound and `holding` only. */
  self?: string;
  /** Workers seen gone (lib/queue/liveness.ts): their running runs are recovered whatever their lease says. */
  gone?: string[];
  /** The caller's runs its slots hold: its other running runs locked before `lockedBefore` are recovered. */
  holding?: { ids: string[]; lockedBefore: Date };
}

export interface SecretListing {
  name: string;
  createdAt: string;
  updatedAt: string;
}

/** The state a seeded run is put in after `runs.ingest` created it queued (scripts/seed.ts only). */
export interface SeedRunState {
  status: RunStatus;
  attempt: number;
  maxAttempts: number;
  nextAttemptAt: string | null;
  lockedBy: string | null;
  lockedAt: string | null;
  claimToken: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  steps: Step[];
  updatedAt: string;
}

/** How the engine hands freed space back to the file system (retention, lib/scheduler/retention). */
export type SpaceMode =
  /** SQLite without auto_vacuum: freed pages stay in the file until a one-time conversion. */
  | "none"
  /** SQLite with auto_vacuum = FULL: every commit returns pages; nothing to do. */
  | "full"
  /** SQLite with auto_vacuum = INCREMENTAL: `reclaimStep` returns pages in small steps. */
  | "incremental"
  /** The engine manages space itself (PostgreSQL autovacuum): retention only deletes rows. */
  | "engine";

// ---------------------------------------------------------------------------------------------
// Aggregates
// ---------------------------------------------------------------------------------------------

/** An alert as Settings lists it and the dispatcher reads it. */
export interface AlertRow {
  id: string;
  appletId: string | null;
  /** The applet's name, joined (null for a test alert or an applet deleted since). */
  appletName: string | null;
  kind: AlertKind;
  runId: string | null;
  error: string | null;
  detail: Record<string, unknown>;
  status: AlertStatus;
  foldedInto: string | null;
  message: string | null;
  channelType: string | null;
  providerAnswer: string | null;
  lockedUntil: string | null;
  dispatchedAt: string | null;
  sentAt: string | null;
  createdAt: string;
}

/**
 * Alerts. Failure, pause and recovery alerts are recorded by `runs.finish` /
 * `finishAndClaim` and trigger alerts by `triggerState.savePolled`, in their transaction, from the
 * decisions of lib/alerts/policy; the dispatcher (lib/alerts/dispatch) sends them under the
 * `alerts` job lock. A send is: `beginSend` (commit the message and the folded ones), the
 * provider's request, then `markSent` / `markFailed`; a `sending` row whose lock passed (its worker
 * died mid-send) is sent again with the same message and idempotency key.
 */
export interface AlertsStore {
  /** The settings row, or the defaults (DEFAULT_ALERT_SETTINGS) when none was saved. */
  settings(): Promise<AlertSettings>;
  /** Upserts the one settings row (updatedAt is `now`). */
  /** `alertOnRetry` left out is off (alerts when runs settle, as before it existed). */
  saveSettings(s: SavedAlertSettings, now: string): Promise<void>;
  /** The applet's channel override and auto-pause choice; false: no such applet. */
  setAppletAlerts(appletId: string, channel: AppletAlertChannel, autoPause: boolean | null, now: string): Promise<boolean>;
  /** Records an alert outside a settle (a test alert from Settings); its id. */
  insert(a: NewAlert & { appletId: string | null }, now: string): Promise<string>;
  /** Pending alerts, oldest first (created_at, id), at most `limit`. */
  pending(limit: number): Promise<AlertRow[]>;
  /** `sending` alerts whose lock ended before `now` (their sender stopped mid-send). */
  stale(now: string): Promise<AlertRow[]>;
  /** When an alert of this applet was last handed to a provider (sent or failed), or null. */
  lastDispatchedAt(appletId: string | null): Promise<string | null>;
  /**
   * Moves `id` from pending to sending with its message, channel type and lock, and `folded` (still
   * pending) to folded into it, in one transaction; false (nothing changed) when `id` is no longer pending.
   */
  beginSend(id: string, folded: string[], message: string, channelType: string, now: string, lockedUntil: string): Promise<boolean>;
  /** Renews a stale send's lock before sending it again; false when it is no longer sending with that lock. */
  relock(id: string, expected: string | null, lockedUntil: string, now: string): Promise<boolean>;
  markSent(id: string, now: string): Promise<void>;
  /** The provider's answer, already redacted. */
  markFailed(id: string, answer: string, now: string): Promise<void>;
  /** Pending alerts that have nowhere to go (no channel): skipped, with the reason as their answer. */
  skip(ids: string[], reason: string, now: string): Promise<void>;
  /** The latest alerts, newest first (created_at desc, id desc), folded ones left out. */
  recent(limit: number): Promise<AlertRow[]>;
  /** How many alerts were folded into this one. */
  foldedCount(id: string): Promise<number>;
  /** Retention: deletes at most `limit` alerts created before `before` that are done (not pending or sending); how many. */
  deleteBefore(before: string, limit: number): Promise<number>;
}

/** Applets (table applets). Events, runs and trigger state belong to an applet (ON DELETE CASCADE). */
export interface AppletsStore {
  /** The applet, or null. */
  get(id: string): Promise<Applet | null>;
  /** Every applet, ordered by created_at, then id. */
  list(): Promise<Applet[]>;
  /**
   * Enabled applets of one trigger type (the mail receiver: `email`), any order; with
   * `includeDisabled`, the disabled ones too (the receiver records a message to one in the fire ledger).
   */
  listByTriggerType(type: string, opts?: { includeDisabled?: boolean }): Promise<Applet[]>;
  /**
   * Inserts with run_count 0 and no last_fired_at, and its version 1, in one transaction. Throws
   * on a duplicate id or webhook token (unique).
   */
  insert(a: AppletInsert): Promise<void>;
  /**
   * Replaces name, enabled, trigger type, definition and webhook token (created_at, counters kept)
   * and stores them as the next version, in one transaction; false (and no version): no such applet.
   */
  update(a: AppletInsert): Promise<boolean>;
  /** Every version of the applet, newest first; [] for an unknown id. */
  versions(id: string): Promise<AppletVersion[]>;
  /** One version, or null. */
  version(id: string, version: number): Promise<AppletVersion | null>;
  /**
   * Replaces the stored definition of one version ("purge this version's credentials"); not a
   * save: no new version, its author and time kept. On SQLite the old text's bytes are zeroed
   * (secure_delete) where the row was. false: no such version.
   */
  rewriteVersion(id: string, version: number, definition: unknown, now: string): Promise<boolean>;
  /** false: no such applet. Not a save: no version is stored (a version records the enabled state its save wrote). Enabling clears an auto-pause (paused_reason, paused_at) and the failure streak. */
  setEnabled(id: string, enabled: boolean, now: string): Promise<boolean>;
  /** The applet holding this webhook token (tokens are unique), or null. */
  byWebhookToken(token: string): Promise<{ id: string; name: string } | null>;
  /** Sets the token (does not touch updated_at); false: no such applet. Throws when another applet holds it. */
  setWebhookToken(id: string, token: string): Promise<boolean>;
  /** Deletes the applet with its events, runs and trigger state (cascade); false: no such applet. */
  delete(id: string): Promise<boolean>;
  /**
   * The webhook hot path: the four columns of the applet with this id, whatever its trigger type
   * (the ingress asks the trigger registry whether requests feed it; any other answers 404 like an
   * unknown hook); null when there is none. One primary-key read.
   */
  forHook(id: string): Promise<HookApplet | null>;
  /**
   * "Listen for test event": keep the next request as a sample until `until` (ISO), or stop
   * (null). Not a save: no version, updated_at kept. false: no such applet.
   */
  setListening(id: string, until: string | null): Promise<boolean>;
  /** Ends the listening if it is on at `now`: true for exactly one caller, the request that is the sample. */
  takeListening(id: string, now: string): Promise<boolean>;
  /** Ids of the applet's events (their attachment folders are deleted with it). */
  eventIds(id: string): Promise<string[]>;
}

/**
 * Trigger state (table trigger_state): the poller's memory, one row per applet, and the
 * scheduler's slot claims. `next_run_at` is compared as stored text (`IS` semantics: null equals
 * null), so a claim is one conditional UPDATE that exactly one worker wins.
 */
export interface TriggerStateStore {
  /** The state, or null when the applet has no row yet (callers use `emptyTriggerState()`). */
  get(appletId: string): Promise<TriggerState | null>;
  /** Upserts every column including next_run_at. */
  save(appletId: string, s: TriggerState, now: string): Promise<void>;
  /** Upserts next_run_at only (applet save / enable / disable: the one source of next_run_at). */
  setNextRunAt(appletId: string, nextRunAt: string | null, now: string): Promise<void>;
  /**
   * Moves next_run_at from `expected` (null matches null) to `next` in one conditional UPDATE;
   * false when it no longer holds `expected` (another worker or a save got there first).
   */
  claimSlot(appletId: string, expected: string | null, next: string, now: string): Promise<boolean>;
  /**
   * The scheduler's claim of a due slot (one worker wins): next_run_at moves from `expected` to
   * `next`, and `expected` is kept as pending_slot until `savePolled` stores its outcome.
   * false when next_run_at is no longer `expected`.
   */
  claimDue(appletId: string, expected: string, next: string, now: string): Promise<boolean>;
  /**
   * Stores a poll's outcome without touching next_run_at (the claim moved it). pending_slot is
   * cleared only when it is still `slot` (a later claim keeps its own). false: no row.
   */
  savePolled(appletId: string, s: Omit<TriggerState, "nextRunAt">, now: string, slot?: string | null): Promise<boolean>;
  // In the same transaction, the alert lib/alerts/policy `onPolled` decides (the error
  // count crossing the threshold, or back to 0 after it) is recorded.
  /** Claimed slots whose outcome was never stored (their worker stopped in between), with the applet's trigger type. */
  listPending(): Promise<PendingSlot[]>;
  /** Clears pending_slot only if it is still `slot`. */
  clearPending(appletId: string, slot: string): Promise<void>;
  setLastError(appletId: string, error: string, now: string): Promise<void>;
  /** Every applet whose state holds a last_error (its trigger's last check failed), ordered by applet id; [] when none. */
  lastErrors(): Promise<TriggerError[]>;
  /**
   * Every state row with a last_error or a next_run_at (the polled applets), ordered by applet id, in
   * one read: the applets list's trigger error marks and overdue checks.
   */
  overview(): Promise<TriggerOverview[]>;
  /**
   * Applets of `types` (joined with their state) that have a next_run_at, ordered by next_run_at
   * then applet id; `dueAt`: only next_run_at <= dueAt; `enabledOnly`; `limit`. An index seek on
   * next_run_at: cost proportional to the due rows, not the stored ones. [] when `types` is empty.
   */
  listScheduled(opts: { types: readonly string[]; dueAt?: string; enabledOnly?: boolean; limit?: number }): Promise<ScheduledApplet[]>;
  /** Enabled applets of `types` with a state row whose next_run_at is null. */
  listUnscheduled(types: readonly string[]): Promise<{ applet_id: string; trigger_type: string; definition: string }[]>;
}

/**
 * The queue: events and runs. Rules (DESIGN.md, the contract suite checks each):
 * - Every trigger ends in `ingest`: the event (deduped on applet + dedupe key) and its queued run
 *   commit together, or neither does.
 * - `claim` takes the oldest due queued run (ordered by next_attempt_at, then created_at) among
 *   applets with no run `running`: at most one running run per applet, ever, across workers. It
 *   sets status running, locked_by, locked_at = started_at = now, a fresh claim token, clears
 *   finished_at, records the applet's current version as applet_version (the version this attempt
 *   executes with, lib/executor/run.ts), and returns the row only after that is committed. A backlog of 100,000 runs of
 *   one applet must cost a claim a few index seeks.
 * - Every settle (`saveSteps`, `finish`, `retryLater`, `release`) is conditional on the run being
 *   `running` with the caller's claim token: a holder whose run was recovered and claimed again
 *   changes nothing and gets false.
 * - A retried run keeps its attempt count going up and is not claimable before its next_attempt_at.
 */
export interface RunsStore {
  /** One event and its queued run in one transaction; null (nothing written) when the dedupe key exists. Throws when the applet does not exist. */
  ingest(i: IngestInput): Promise<Ingested>;
  /**
   * An event whose run is not to execute (a schedule's overlap policy): the event and a run that is
   * already `skipped` with `reason` as its error, in one transaction; deduped like `ingest`.
   */
  ingestSkipped(i: IngestInput, reason: string): Promise<Ingested>;
  /** How many runs of the applet wait (queued, also for a retry) and run now: an overlap policy's question. */
  activeOf(appletId: string): Promise<{ queued: number; running: number }>;
  /** The event a dedupe key was first stored with and its first run (what a sender's redelivery is told); null when the key is unknown. One index seek. */
  firstOfDedupeKey(appletId: string, dedupeKey: string): Promise<{ eventId: string; runId: string | null } | null>;
  /** The status of each of these runs that exists (one query serves every webhook waiting on its run). */
  statuses(ids: string[]): Promise<Map<string, RunStatus>>;
  /**
   * Group commit: many ingests, one commit. Each slot holds its result, or the Error of that row
   * alone (its applet was deleted a moment ago): one bad row never fails the others. Throws only
   * when nothing could be stored (the database failed).
   */
  ingestMany(items: IngestInput[]): Promise<(Ingested | Error)[]>;
  /** Claims the oldest due queued run whose applet has nothing running, with its event; null when there is none. */
  claim(workerId: string, now: Date): Promise<ClaimedRun | null>;
  /** Records progress mid-run (steps, updated_at); false when the claim was lost. */
  saveSteps(run: ClaimedRun, steps: Step[], now: Date): Promise<boolean>;
  /**
   * Ends the run with a final status, error and steps (`steps` null keeps the stored ones),
   * finished_at = now, clears lock, token and next_attempt_at, and in the same transaction counts
   * it on the applet (run_count + 1, last_fired_at = now). false (and no count) when the claim was lost.
   * In the same transaction: failed/dead add one to the applet's failure streak and
   * succeeded resets it; the alerts lib/alerts/policy `onRunSettled` decides are recorded, and an
   * auto-pause it decides disables the applet with its reason.
   */
  finish(run: ClaimedRun, status: FinalStatus, steps: Step[] | null, error: string | null, now: Date): Promise<boolean>;
  /**
   * `finish`, then `claim` for `workerId`, in ONE transaction (one commit per run on a busy worker).
   * `next` is claimed even when `ok` is false (a lost claim still frees the worker).
   */
  finishAndClaim(
    run: ClaimedRun,
    status: FinalStatus,
    steps: Step[] | null,
    error: string | null,
    now: Date,
    workerId: string,
  ): Promise<{ ok: boolean; next: ClaimedRun | null }>;
  /** Back to queued for the next attempt: attempt + 1, next_attempt_at, steps and error stored, lock and token cleared. false: claim lost. */
  retryLater(run: ClaimedRun, steps: Step[], error: string, nextAttemptAt: Date, now: Date): Promise<boolean>;
  /** Hands a claimed run back with the same attempt (started_at cleared): a worker stopping, or one that could not start it. false: claim lost. */
  release(run: ClaimedRun, now: Date): Promise<boolean>;
  /**
   * Running runs nobody will settle go back to queued with the same attempt and the same
   * next_attempt_at (null becomes created_at), so they keep their place (oldest first): those
   * whose locked_by names no worker with a live lease (`workers.lease_until > now`, or no row),
   * and any locked before `stuckBefore`. Runs locked by `self` are judged by the stuck bound only.
   * Also those of the workers in `gone`, and the caller's own that it does not hold (`holding`).
   * Each is fenced by the token seen, so a run settled in between is left alone. Returns those
   * recovered. A plain read when there is nothing to recover.
   */
  recoverStale(opts: RecoverStaleOptions): Promise<RecoveredRun[]>;
  get(id: string): Promise<Run | null>;
  /** The event, payload parsed; null when unknown. Throws (naming the event) when the payload is not JSON. */
  event(eventId: string): Promise<StoredEvent | null>;
  /**
   * The editor's sample picker: this applet's latest `limit` events, newest first (received_at
   * desc, then id desc), payload parsed; [] for an applet without events or an unknown id.
   */
  recentEvents(appletId: string, limit: number): Promise<RecentEvent[]>;
  /**
   * The Retry button: a failed or dead run queued again now, attempt + 1 (max_attempts raised to fit). false: not failed/dead or unknown.
   * `opts.steps` replaces the stored journal (retry from a step: the entries before it), only while
   * the run is still at `opts.attempt` (a retry meanwhile makes it false); `opts.at` makes it due
   * later than now (a paced bulk retry).
   */
  retry(id: string, now: Date, opts?: RetryOptions): Promise<boolean>;
  /**
   * The Replay button: a fresh queued run (attempt 1, no steps) of the same event, created now; its
   * id, or null when the run is unknown. It runs in `opts.lane` (lib/queue/replay: the lane its event
   * gets under the applet's controls now), or in the original run's lane when none is given.
   */
  replay(id: string, now: Date, opts?: { lane?: string }): Promise<string | null>;
  /**
   * A page of runs, newest first (created_at desc, id desc), by keyset cursor; nextCursor null on
   * the last page. With errorText / payloadText, bounded as `RUN_SEARCH_SCAN` says.
   */
  list(f: RunListFilter): Promise<RunPage>;
  /**
   * The runs of one event, oldest first (created_at, then id), at most `limit`: the first is the
   * original (or the oldest retention kept), the others its replays. One index seek on event_id.
   */
  ofEvent(eventId: string, limit: number): Promise<EventRun[]>;
  /**
   * For the SSE stream: runs whose (updated_at, id) comes after (`at`, `id`) in that order, oldest
   * change first, at most `limit` (default 500). `id` "" starts at `at` itself (updated_at >= at).
   */
  changedAfter(at: string, id: string, limit?: number): Promise<RunChange[]>;
  /** Per applet (every applet, also those without runs): runs created since `since` and the latest run. */
  statsByApplet(since: string): Promise<AppletRunStats[]>;
  /**
   * GET /metrics and the Health panel: runs per applet and status (created since `since`, plus every
   * queued and running one), the queue depth and its oldest due run at `now`. Index reads only: the
   * queued and running runs through their partial indexes, the rest through created_at.
   */
  tally(since: string, now: Date): Promise<RunTally>;
}

/**
 * Timed actions' planned runs: @vibedout/automations' scheduler semantics on the app's
 * database (lib/timed/scheduler adapts this to the library's Scheduler for its sweepDue). Times are
 * epoch milliseconds, as the library's. Each planned run also has its row in `runs` (same id):
 * `planned` while it waits, `cancelled`/`skipped` with its reason, and `queued` once dispatched, when
 * the queue executes it like any run. Every settle is fenced by the claim token.
 */
export interface PlannedRunsStore {
  /**
   * Writes a plan (as `runs.ingest` does with `IngestInput.plan`): pending runs of older versions
   * under the cancel key are cancelled (their `runs` rows too, with the reason); each run is inserted
   * unless the subject already reached a newer version, or the id exists (a redelivery); the
   * subject's version is recorded. Returns the ids inserted and cancelled.
   */
  apply(plan: PlanWrite): Promise<{ inserted: string[]; cancelled: string[] }>;
  /**
   * Claims up to `limit` runs: pending and due, or running with a lease run out; each gets `token`, a
   * lease until now + leaseMs, attempts + 1. First, running runs whose lease ran out on their last
   * allowed attempt are failed. Ordered by due time, then id. PostgreSQL: FOR UPDATE SKIP LOCKED, so
   * concurrent sweeps take disjoint runs.
   */
  claimDue(now: number, opts: { limit: number; leaseMs: number; maxAttempts: number; token: string }): Promise<ClaimedPlannedRun[]>;
  /** Done (the send is handed on): its `runs` row goes planned → queued, due now. false: claim lost. */
  dispatch(run: ClaimedPlannedRun, now: number): Promise<boolean>;
  /** Skipped with a reason; its `runs` row too. false: claim lost. */
  skip(run: ClaimedPlannedRun, now: number, reason: string): Promise<boolean>;
  /** Failed with the error; its `runs` row too. false: claim lost. */
  fail(run: ClaimedPlannedRun, now: number, error: string | null): Promise<boolean>;
  /** Back to pending, due at `dueAt` (attempts kept). false: claim lost. */
  retry(run: ClaimedPlannedRun, now: number, dueAt: number, error: string | null): Promise<boolean>;
  /** Back to pending at `untilMs`, the attempt not counted, the lateness window moved along. false: claim lost. */
  defer(run: ClaimedPlannedRun, now: number, untilMs: number): Promise<boolean>;
  /** The frequency cap's count (`ruleId` is the applet id): done since `since`, plus live claims sorting before. */
  countRecent(q: CountRecentQuery): Promise<number>;
  get(id: string): Promise<StoredPlannedRun | null>;
  /** The applet's planned runs, by due time then id; `status` filters. */
  list(appletId: string, opts: { status?: string; limit: number }): Promise<StoredPlannedRun[]>;
  /**
   * What the anchor guard compares with: under the cancel key, the newest planned run of the step
   * (highest subject version), and the version the subject reached; null when there is neither.
   */
  latest(cancelKey: string, stepId: string): Promise<{ subjectVersion: number | null; anchorAt: number | null; reachedVersion: number | null }>;
  /** Deletes finished planned runs and version records last touched before `before`; planned runs deleted. */
  purgeFinished(before: number): Promise<number>;
}

/** Encrypted secrets (lib/secrets encrypts; the store keeps ciphertext only). */
export interface SecretsStore {
  /** Names with timestamps, ordered by name; never values. */
  list(): Promise<SecretListing[]>;
  /** The ciphertext, or null. */
  getEncrypted(name: string): Promise<string | null>;
  /**
   * Every name with its ciphertext, in one read (any order): a run, a poll or a signed webhook
   * renders its templates against this snapshot, decrypting only the names they use.
   */
  allEncrypted(): Promise<{ name: string; valueEncrypted: string }[]>;
  /** Upsert by name (a new row takes `id`; an existing one keeps its id and created_at). */
  put(id: string, name: string, encrypted: string, now: string): Promise<void>;
  delete(name: string): Promise<boolean>;
}

/** An API token as lists show it; the value is never stored, only its SHA-256 (`hash`). */
export interface ApiTokenRow {
  id: string;
  name: string;
  prefix: string;
  readOnly: boolean;
  lastUsedAt: string | null;
  /** When it stops being accepted (ISO, UTC); null: never. */
  expiresAt: string | null;
  createdAt: string;
}

/** API tokens for scripts and the CLI, found by the SHA-256 of their value (lib/auth/tokens makes and checks them). */
export interface ApiTokensStore {
  /** Oldest first. */
  list(): Promise<ApiTokenRow[]>;
  byHash(hash: string): Promise<ApiTokenRow | null>;
  nameTaken(name: string): Promise<boolean>;
  /** Throws on a hash or id that exists (unique). */
  insert(t: { id: string; name: string; hash: string; prefix: string; readOnly: boolean; expiresAt: string | null; now: string }): Promise<void>;
  /** Sets last_used_at (the caller throttles). */
  touch(id: string, now: string): Promise<void>;
  /** Revokes: the row goes; false when there was none. */
  delete(id: string): Promise<boolean>;
}

/** One file of an event (an inbound mail attachment) as it is saved. */
export interface EventFileInput {
  /** Already sanitized (lib/files/sanitize) and unique within the event. */
  filename: string;
  contentType: string;
  content: Buffer;
}

export interface StoredEventFile {
  contentType: string;
  size: number;
  content: Buffer;
}

/**
 * Event files in the database: whichever host received the mail, every web process serves
 * its attachments. Saved before the event row (which may turn out a duplicate), so there is no
 * foreign key: whoever deletes events deletes their files too (applet deletion, retention).
 */
export interface EventFilesStore {
  /** The event's files, all or none. Throws when the event already has a file of one of those names. */
  save(eventId: string, files: EventFileInput[], now: string): Promise<void>;
  /** Gives `toEventId` a copy of every file of `fromEventId` (one message matching several applets); how many. */
  copy(fromEventId: string, toEventId: string, now: string): Promise<number>;
  get(eventId: string, filename: string): Promise<StoredEventFile | null>;
  /** Removes every file of these events; how many files. */
  deleteForEvents(eventIds: string[]): Promise<number>;
}

/** Users and their session version (sessions themselves are signed cookies, lib/auth/session). */
export interface UsersStore {
  count(): Promise<number>;
  /** Exact match on the stored (normalised) email. */
  byEmail(email: string): Promise<User | null>;
  byId(id: string): Promise<User | null>;
  /** The first user created (the admin), or null. */
  first(): Promise<User | null>;
  /** Inserts with session_version 1. Throws on a duplicate email. */
  insert(u: NewUser): Promise<void>;
  /**
   * First-run setup: inserts only while the table is empty, serialised so that two setups racing
   * (in one process or several) create one user; false when a user already exists.
   */
  insertIfNone(u: NewUser): Promise<boolean>;
  /** session_version + 1 (revokes every session so far); the new version, or null for no such user. Committed before it returns. */
  bumpSessionVersion(id: string, now: string): Promise<number | null>;
  /** A new password hash, and session_version + 1; the new version, or null. */
  setPassword(id: string, passwordHash: string, now: string): Promise<number | null>;
}

/**
 * Named job locks (spec "Data model: job_locks"; rows `scheduler_tick`, `retention`,
 * `worker_heartbeat` exist after migration; any other name gets its row on its first take).
 * Taking is one conditional upsert; renew and release only touch a lock still held by `holder`.
 */
export interface JobLocksStore {
  /** Takes the lock when free or expired (expires_at < now): true for exactly one caller. */
  take(name: string, holder: string, now: Date, ttlMs: number): Promise<boolean>;
  /** Extends expires_at to now + ttl; false when `holder` no longer holds it. */
  renew(name: string, holder: string, now: Date, ttlMs: number): Promise<boolean>;
  /** Frees it and records last_run_at = now; false when `holder` no longer holds it. */
  release(name: string, holder: string, now: Date): Promise<boolean>;
  /** Sets last_run_at = now without locking (the worker heartbeat). */
  heartbeat(name: string, now: Date): Promise<void>;
  get(name: string): Promise<JobLock | null>;
}

/** Worker leases (lib/queue/lease), read by `runs.recoverStale` and /api/health. */
export interface WorkersStore {
  /**
   * Renews (or first registers) the worker's lease (lease_until = now + leaseMs, seen_at, fault)
   * and sets `worker_heartbeat`'s last_run_at, in one transaction. Throws when it cannot be written.
   */
  heartbeat(h: Heartbeat): Promise<void>;
  /** A clean stop: the row goes, so nothing waits for the lease to expire. */
  remove(id: string): Promise<boolean>;
  /** Workers whose lease_until is after `now`, oldest (created_at, id) first. */
  live(now: Date): Promise<WorkerRow[]>;
  /** Drops rows whose lease ended before `before` and that no running run names; how many. */
  prune(before: Date): Promise<number>;
  /** PostgreSQL: opens the worker's liveness session (see LivenessSession); absent on SQLite. */
  openLivenessSession?(): LivenessSession;
}

/** Retention and space (lib/scheduler/retention), in small transactions that never hold the write lock long. */
export interface MaintenanceStore {
  /** Deletes at most `limit` finished (not queued/running) runs created before `before`; how many. */
  deleteRunsBefore(before: string, limit: number): Promise<number>;
  /** Deletes at most `limit` events received before `before` that no run references; their ids. */
  deleteEventsBefore(before: string, limit: number): Promise<string[]>;
  spaceMode(): Promise<SpaceMode>;
  /** Bytes of the database and of its free space (0 where the engine does not say). */
  size(): Promise<{ bytes: number; freeBytes: number; pageSize: number }>;
  /** Mode `none` only: switch to incremental (SQLite: one VACUUM; needs free disk about the file's size). */
  convertToIncremental(): Promise<void>;
  /** Mode `incremental` only: return up to `pages` free pages to the file system, one short write. */
  reclaimStep(pages: number): Promise<void>;
  /**
   * PostgreSQL: a run that leaves the queue (claimed, then finished) leaves entries in the queue's
   * partial indexes that point at row versions no one can see any more, and every claim's walk in
   * due order reads past them until VACUUM removes them. Autovacuum comes by rarely on a table with
   * a long history (20 % of its rows must have changed), and then skips the indexes while few heap
   * pages hold dead rows. This vacuums `runs`, indexes included, when at least `minChanges` rows
   * changed or went since this process last did; `ms`: how long it took. Absent where index entries
   * go with their rows (SQLite).
   */
  vacuumQueue?(opts: { minChanges: number }): Promise<{ vacuumed: boolean; ms: number }>;
}

/** Writes only scripts/seed.ts needs (demo runs in every state); kept apart so the queue's fenced settles stay the only way the app changes a run. */
export interface SeedStore {
  /** Overwrites the run's state; false: no such run. */
  setRunState(runId: string, s: SeedRunState): Promise<boolean>;
  /** Recomputes run_count (finished runs) and last_fired_at (latest finished_at) from the runs. */
  recountApplet(appletId: string): Promise<void>;
}

/**
 * What became of one fire the app considered (the fire ledger). `fired`, `filtered` and
 * `skipped_overlap` are a run's own rows (read from events and runs); the others are stored.
 */
export const LEDGER_OUTCOMES = ["fired", "late", "skipped_overlap", "dropped_catchup", "missed", "deduplicated", "refused", "filtered", "paused", "disabled", "debounced", "rate_limited"] as const;
export type LedgerOutcome = (typeof LEDGER_OUTCOMES)[number];

export interface LedgerInsert {
  appletId: string;
  /** When the fire was due or arrived (a schedule's slot; a request's arrival; a counted minute's start). */
  at: string;
  outcome: LedgerOutcome;
  /** Why, in a short sentence (cut to 300 characters). */
  detail: string;
  runId?: string | null;
  dedupeKey?: string | null;
  /** Fires this row stands for (a counted minute, or "…and N more" missed slots); default 1. */
  count?: number;
}

export interface LedgerEntry {
  /** A stored row's id, or `run:<run id>` for a run's own row. */
  id: string;
  at: string;
  outcome: LedgerOutcome;
  detail: string;
  runId: string | null;
  /** The run's status when the row is a run's (or names one that still exists). */
  runStatus: string | null;
  dedupeKey: string | null;
  count: number;
}

export interface LedgerPage {
  entries: LedgerEntry[];
  /** Pass as `before` for the next (older) page; null at the end. */
  nextCursor: string | null;
}

/** An applet's expected activity and its quiet state, with the newest event it received. */
export interface ActivityRow {
  appletId: string;
  /** User-set: at least one event every this many hours; null: no expectation of its own. */
  expectEveryHours: number | null;
  /** When the expectation was set (the silence is counted from here when no event came since). */
  expectSince: string | null;
  /** A quiet alert is open since this time (recorded; no recovery yet). */
  quietSince: string | null;
  /** What the quiet alert said. */
  quietDetail: string | null;
  lastEventAt: string | null;
}

/** The fire ledger and expected activity (lib/fires). */
export interface FiresStore {
  /** Stores ledger rows (each its own row); nothing for an empty list. */
  record(rows: LedgerInsert[], now: string): Promise<void>;
  /**
   * Adds `count` to the applet's row for `bucket` (e.g. `refused:2026-12-05T10:04:signature`),
   * creating it: refusals and requests to a disabled applet are counted, never stored one by one.
   */
  count(row: LedgerInsert & { bucket: string; count: number }, now: string): Promise<void>;
  /** Newest first: the stored rows and the runs' own rows together, optionally one outcome, older than `before`. */
  list(appletId: string, opts: { outcome?: LedgerOutcome; before?: string | null; limit: number }): Promise<LedgerPage>;
  /** Stored rows by outcome (sum of counts) updated since `since`, over every applet: /metrics. */
  totals(since: string): Promise<{ outcome: string; count: number }[]>;
  /** Deletes at most `limit` stored rows last updated before `before`; how many. */
  deleteBefore(before: string, limit: number): Promise<number>;
  /** Sets (hours) or clears (null) the applet's own expectation; false: no such applet. */
  setExpectation(appletId: string, hours: number | null, now: string): Promise<boolean>;
  /** Every applet that has an expectation or an open quiet alert, with its newest event's time. */
  activity(): Promise<ActivityRow[]>;
  /** Opens the quiet alert (only when none is open): true for exactly one caller. */
  openQuiet(appletId: string, detail: string, now: string): Promise<boolean>;
  /** Closes an open quiet alert: true for exactly one caller. */
  closeQuiet(appletId: string, now: string): Promise<boolean>;
}

/** One event of a debounced run (its own first, then those merged into it, oldest first). */
export interface MergedEvent {
  id: string;
  receivedAt: string;
  payload: Record<string, unknown>;
}

/**
 * Controls over runs (lib/definition/controls.ts). Their ingest goes through `runs.ingest` (an
 * input with `controls`); this is what the executor reads back.
 */
export interface RunControlsStore {
  /** A debounced run's events, oldest first: its own, then those merged into it (at most 10,000). */
  mergedEvents(runId: string): Promise<MergedEvent[]>;
  /**
   * A claimed run of an applet with a rate limit, before it starts (../run-controls `admitStart`),
   * in one transaction that the applet's starts take in turn: `admitted` (its start recorded), or
   * `held`: back to queued until the limit allows it, with the applet's other queued runs due
   * earlier moved to that time too (they would be held the same way), and a ledger row when the
   * hold is not a moment's. `lost`: the claim was lost meanwhile (nothing changed).
   */
  admitStart(run: Pick<ClaimedRun, "id" | "appletId" | "claimToken">, rate: NonNullable<IngestControls["rate"]>, now: Date): Promise<"admitted" | "held" | "lost">;
}

/** The aggregates bound to one transaction (or to autocommit, on `Store` itself). */
export interface StoreAggregates {
  applets: AppletsStore;
  triggerState: TriggerStateStore;
  /** The queue: events + runs. */
  runs: RunsStore;
  /** Timed actions' planned runs. */
  plannedRuns: PlannedRunsStore;
  secrets: SecretsStore;
  users: UsersStore;
  jobLocks: JobLocksStore;
  workers: WorkersStore;
  seed: SeedStore;
  apiTokens: ApiTokensStore;
  eventFiles: EventFilesStore;
  alerts: AlertsStore;
  /** The fire ledger and expected activity. */
  fires: FiresStore;
  /** Controls over runs: what a debounced run carries. */
  runControls: RunControlsStore;
  /** Runs parked at a wait step. */
  waits: WaitsStore;
}

/** `Store#transaction`'s argument: the same aggregates, every call part of one transaction. */
export type StoreTx = StoreAggregates;

export interface Store extends StoreAggregates {
  /** Engine name for logs and health (`sqlite` | `postgres`); never branch on it above the stores. */
  readonly engine: string;
  maintenance: MaintenanceStore;
  /**
   * Cross-process wake-ups (PostgreSQL: LISTEN/NOTIFY). Absent where the engine has none (SQLite):
   * callers then keep polling. Each `on…` returns its unsubscribe function. A listener may be
   * called spuriously or late (a poll stays the safety net); it must not throw.
   */
  notifications?: {
    /** A run became claimable (ingest, retry, replay, release, recovery) in any process. */
    onQueued(listener: () => void): () => void;
    /**
     * Runs were inserted or changed status in any process (the SSE stream of every web process).
     * Says only that something changed: what changed is `runs.changedAfter` (one announcement per
     * statement or transaction, however many rows it wrote).
     */
    onRunChanged(listener: () => void): () => void;
    /**
     * This process has a live view open (an SSE stream) for the next `forMs`: run changes are
     * announced (onRunChanged, in every process) only while some process says so, since each
     * announcement wakes every listening session. Renew it well before it runs out.
     */
    watchRuns(watcherId: string, forMs: number): Promise<void>;
    /**
     * This worker has an idle slot for the next `forMs`: runs that become claimable are announced
     * (onQueued, in every process) only while some worker says so, since an announcing commit
     * holds the server's one notification lock through its WAL flush and so serialises every
     * other announcing commit. Resolves once the transactions in progress when the row went in
     * have ended (they may have looked for a row before it was there): a look at the queue after
     * it misses no run. `settle: false`, a renewal of a row that has not lapsed, skips that wait.
     */
    watchQueue(workerId: string, forMs: number, opts?: { settle?: boolean }): Promise<void>;
    /** This worker's slots are all busy again (or it stops): no announcement is needed for it. */
    unwatchQueue(workerId: string): Promise<void>;
  };
  /**
   * Unit of work: runs `fn` with the aggregates bound to one transaction, commits when the
   * promise it returns resolves, rolls back (and rethrows) when it rejects. Resolves after COMMIT.
   *
   * Rules for `fn`:
   * - Use only `tx` inside it, never the outer `store` (on SQLite, whose one connection the
   *   transaction holds, an outer call waits for the transaction that waits for it).
   * - Await only store calls: no network or file I/O while the transaction holds its locks.
   * - Transactions do not nest (`tx` has no `transaction`); a method that is a transaction of its
   *   own (`ingest`, `finish`, `heartbeat`, …) called on `tx` becomes part of the outer one.
   * - Writes inside it are serialised with every other writer (SQLite: BEGIN IMMEDIATE;
   *   PostgreSQL: READ COMMITTED with the row locks the statements take), so a read-then-write in
   *   `fn` sees no concurrent write of the same rows committed in between on SQLite; on PostgreSQL
   *   the conditional UPDATEs above (claims, fenced settles) carry the correctness, not the isolation level.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** Resolves when every call in flight has settled and the connection(s) are closed. */
  close(): Promise<void>;
  /**
   * Where opening needs I/O the synchronous `openStore` cannot do (PostgreSQL: migrations under an
   * advisory lock, the key check), it happens in the background; this resolves when it is done and
   * rejects with the reason the process must not start. Composition roots await it before serving.
   * Absent (SQLite): the store is ready when `openStore` returns.
   */
  ready?(): Promise<void>;
}

/** What a composition root asks for; lib/db/store/index.ts picks the implementation from `url`. */
export interface StoreOptions {
  /** `file:…` or a path (SQLite), `postgres://…` (PostgreSQL). */
  url: string;
  /** Web processes leave WAL checkpoints to a background thread (SQLite only; others ignore it). */
  role?: "web" | "worker";
  sqliteSynchronous?: "NORMAL" | "FULL";
  /** PostgreSQL connection pool size per process. */
  poolSize?: number;
}

/** How a wait ended: its time came, it timed out, its call came, a decision, the run log's resume-now or cancel. */
export type WaitResolution = "time" | "timeout" | "called" | "approved" | "denied" | "resumed" | "cancelled";

/** What a run parked at a wait step waits for (lib/executor/wait.ts builds it). */
export interface WaitInsert {
  /** The run's n-th wait (0-based): its resume and approval links name it. */
  seq: number;
  stepId: string;
  kind: "delay" | "until" | "for_call" | "for_approval";
  /** When the tick resumes it (its time or its timeout, the earlier); null: only a call or a decision does. */
  resumeAt: Date | null;
  resumeAs: "time" | "timeout" | null;
  timeoutAt: Date | null;
  /** What the run log and the approval page show (the rendered approval message, the time waited for). */
  detail: Record<string, unknown>;
  /** The run log's words while it waits ("waiting for approval — times out 16:02"), kept as the run's reason. */
  summary: string;
  /**
   * Strict order (the applet's controls.order): the run keeps its lane while it waits, so the
   * applet's later runs in that lane are not started until it has resumed and finished.
   */
  holdsLane?: boolean;
}

export interface StoredWait {
  runId: string;
  seq: number;
  appletId: string;
  stepId: string;
  kind: WaitInsert["kind"];
  resumeAt: string | null;
  resumeAs: "time" | "timeout" | null;
  timeoutAt: string | null;
  detail: Record<string, unknown>;
  resolution: WaitResolution | null;
  resolvedAt: string | null;
  /** Who resolved it: the address a call or decision came from, a user of the run log, "clock". */
  resolvedBy: string | null;
  /** A call's body (parsed JSON or text), a decision's record. */
  output: unknown;
  createdAt: string;
  /** The run's status now. */
  runStatus: RunStatus;
}

export interface WaitResolve {
  runId: string;
  seq: number;
  resolution: WaitResolution;
  by: string;
  output: unknown;
  now: Date;
  /** A resume call may arrive before its run reached the wait: the call is kept and the wait ends at once when reached. */
  early?: { appletId: string; kind: WaitInsert["kind"] };
}

/**
 * Waiting runs: a run parked at a wait step is its `runs` row (status `waiting`, no lock, no
 * token) plus a `run_waits` row saying what resumes it. Each wait is resolved exactly once (a
 * conditional update), and in that same transaction its run goes back to `queued`.
 */
export interface WaitsStore {
  /**
   * Parks a claimed run (fenced by its claim token) with its steps so far. When its wait was already
   * resolved (a call that came first), the run is queued again instead. "lost": the claim was taken over.
   */
  suspend(run: ClaimedRun, steps: Step[], wait: WaitInsert, now: Date): Promise<"waiting" | "queued" | "lost">;
  get(runId: string, seq: number): Promise<StoredWait | null>;
  /** The unresolved wait of a run, if it is waiting. */
  pendingOf(runId: string): Promise<StoredWait | null>;
  /**
   * Resolves an unresolved wait and queues its run: "resolved" for exactly one caller; otherwise
   * the wait as it is (already resolved, or none: null).
   */
  resolve(r: WaitResolve): Promise<{ resolved: true } | { resolved: false; wait: StoredWait | null }>;
  /** The tick: resolves up to `limit` waits due at `now` (as their `resume_as`) and queues their runs; returns how many. */
  resumeDue(now: Date, limit: number): Promise<number>;
  /** Cancels a waiting run: its wait resolved `cancelled`, the run `cancelled` with `reason`. false: it was not waiting. */
  cancel(runId: string, by: string, reason: string, now: Date): Promise<boolean>;
  /** The unresolved waits of waiting runs, soonest first (no time last), at most `limit`; of one applet when given. */
  listWaiting(opts: { appletId?: string; limit: number }): Promise<StoredWait[]>;
  /** How many runs are waiting, by kind. */
  countWaiting(): Promise<Record<string, number>>;
}
