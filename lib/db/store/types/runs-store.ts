/**
 * The runs aggregate: events in, the queue (claim, settle, recovery) and the reads of runs. The
 * run's own model (steps, statuses) is ./runs.ts, which pages in the browser import too.
 */
import type { events, runs } from "../sqlite/schema";
import type { Applet } from "./applets";
import type { PlanWrite } from "./planned-runs";
import type { RunStatus, Step } from "./runs";

type RunColumns = typeof runs.$inferSelect;
type EventColumns = typeof events.$inferSelect;

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

/** What the store says about the queue for GET /metrics and the Settings Health panel. */
export interface RunTally {
  /** Runs per applet and status: those created since `since`, and every queued and running one whatever its age. */
  byApplet: { appletId: string; status: string; count: number }[];
  /** Runs waiting in the queue (due now or for a later retry). */
  queued: number;
  /** The oldest next_attempt_at (created_at when it has none) of a queued run that is due at `now`; null when none is due. */
  oldestDueAt: string | null;
}

/** An event as the editor's sample picker shows it: payload parsed. */
export interface RecentEvent {
  id: string;
  source: string;
  receivedAt: string;
  payload: Record<string, unknown>;
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
   * succeeded resets it; the alerts the store's alert policy `onRunSettled` decides are recorded,
   * and an auto-pause it decides disables the applet with its reason.
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
   * queued and running one), the queue depth and its oldest due run at `now`, all read in one
   * snapshot (a claim is never half in it). Index reads only: the queued and running runs through
   * their partial indexes, the rest through created_at.
   */
  tally(since: string, now: Date): Promise<RunTally>;
}
