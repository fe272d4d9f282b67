import type { ScheduleTiming } from "@whenthen/schedules";
import type { z } from "zod";
import type { EventFileInput, LedgerOutcome } from "../db/store/types";
import type { NormalizedEmail } from "../mail/normalize";
import type { PluginContext } from "../plugin";
import type { TriggerState } from "../db/store/types/trigger-state";

export interface Ingredient {
  name: string;
  description: string;
}

/** The poller's memory is the store's model (lib/db/store/types/trigger-state.ts). */
export { emptyTriggerState, type TriggerState } from "../db/store/types/trigger-state";

export interface NewEvent {
  /** Unique per applet: a second event with the same key is ignored. null: never deduped. */
  dedupeKey: string | null;
  payload: Record<string, unknown>;
  /** What the fire ledger keeps about this fire beside its run (a schedule's catch-up fire: late, by how much). */
  note?: LedgerNote;
}

/** A row of the fire ledger a poll asks for (the tick stores it with the poll's events). */
export interface LedgerNote {
  at: string;
  outcome: Extract<LedgerOutcome, "late" | "missed" | "dropped_catchup">;
  detail: string;
  /** Fires the row stands for ("…and N more"); default 1. */
  count?: number;
}

/**
 * What a polled event does when the applet's previous run is still queued or running: `queue` it
 * behind (the default), `skip` it (stored as a skipped run with reason overlap, visible in the run
 * log), or `buffer_one`: queue it unless one is already waiting, else skip it.
 */
export type OverlapPolicy = "queue" | "skip" | "buffer_one";

export interface PollResult {
  /** In firing order (oldest first). */
  events: NewEvent[];
  /** How these events meet a run of the applet still in progress; default `queue`. */
  overlap?: OverlapPolicy;
  /** Fires considered and not made (a schedule's slots missed in downtime, dropped by its catch-up window). */
  notes?: LedgerNote[];
  /** Fields of trigger_state to write (nextRunAt is decided by the scheduler from `timing`). */
  state: Partial<Omit<TriggerState, "nextRunAt">>;
}

export interface PollContext extends PluginContext {
  /** Renders a template string (secrets available) for configs like poll headers. */
  render(template: string): Promise<string>;
  /**
   * A copy of `value` with every secret value rendered through this context so far replaced by
   * "[redacted]" (the value itself when none was). Whatever a poll stores, logs or returns goes
   * through it.
   */
  redact<T>(value: T): T;
}

/** What every trigger plug-in declares, however it is fed. */
interface TriggerBase<C, T extends string> {
  type: T;
  label: string;
  description: string;
  /**
   * Validates the stored config on save and before each use. Its keys described with `field(…)`
   * (lib/plugin) are the editor's form.
   */
  configSchema: z.ZodType<C>;
  ingredients: Ingredient[];
  /** A realistic payload for "Send test event", Preview and Test filter. */
  sample: Record<string, unknown>;
  /** A config that parses, for the plug-in contract test and as documentation. */
  exampleConfig: Record<string, unknown>;
  /**
   * Config keys holding a URL whenthen fetches: checked on save (http or https, not a private
   * address unless ALLOW_PRIVATE_URLS) and again at fetch time. A templated value is checked when
   * rendered.
   */
  urlFields?: readonly string[];
  /** "Fetch now" in the editor: fetch without saving and describe what a poll would see. */
  preview?(config: C, ctx: PollContext): Promise<unknown>;
  /** The editor's name for `preview` ("Fetch now" when not set): "Test connection" for a mailbox or a broker. */
  previewLabel?: string;
  /**
   * The config keys `preview` reads. "Fetch now" checks only these: the others (how often to poll,
   * how many items fire) take their defaults, so a value being typed into an unrelated field never
   * stops a fetch. Every key the plug-in's schema requires must be among them.
   */
  previewReads?: readonly (keyof C & string)[];
}

/** One request to `/api/hooks/<appletId>/<token>`, after the ingress checked the token and the size. */
export interface RespondConfig {
  respond_wait_seconds?: number;
  respond_status?: number;
  respond_body?: string;
  respond_content_type?: string;
}

export interface HookRequest {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  query: Record<string, string | string[]>;
  rawBody: Buffer;
  contentType: string;
  receivedAt: string;
}

/** What a request-fed trigger may use: a renderer for `{{secrets.NAME}}` in its config. Synchronous: this is the hot path. */
export interface HookContext {
  render(template: string): string;
  /** The time, for signatures with a replay window. */
  nowMs(): number;
}

/**
 * An event to store (the ingress answers 202, or waits for the run when `respond` says so), or a
 * refusal: its status, the body's `error` (empty: an empty body, nothing for a forger to learn) and
 * `reason`, which only the owner's log sees.
 */
export type HookOutcome =
  | { accept: true; event: NewEvent; respond?: RespondConfig }
  | { accept: false; status: number; error: string; reason?: string };

/** Fed by an HTTP request to the applet's webhook URL (lib/http/ingress). */
export interface RequestTrigger<C, T extends string> extends TriggerBase<C, T> {
  feed: "http";
  handleRequest(config: C, req: HookRequest, ctx: HookContext): HookOutcome;
}

/** One message the SMTP receiver accepted (lib/mail/receiver). */
export interface MailMessage {
  email: Pick<NormalizedEmail, "to" | "from" | "from_name" | "subject">;
  /** SMTP envelope recipients (empty for a sample or a test event). */
  envelopeRcpts: string[];
}

/** Fed by mail: each accepted message becomes one event per applet whose config matches it. */
export interface MailTrigger<C, T extends string> extends TriggerBase<C, T> {
  feed: "mail";
  /** Pure: whether this applet wants the message (dedupe key: its Message-ID). */
  match(config: C, message: MailMessage): boolean;
}

/** Polled by the scheduler tick (lib/tick) on the timing it declares. */
export interface PolledTrigger<C, T extends string> extends TriggerBase<C, T> {
  feed: "polled";
  /** When it runs, from the config and the state (a feed backs off after errors). One source for next_run_at. */
  timing(config: C, state: Pick<TriggerState, "errorCount">): ScheduleTiming;
  /**
   * The timing a stored config that no longer parses still spells (edited by hand), so the poll
   * reports the problem in last_error; an invalid timing makes the scheduler disable the applet.
   */
  timingOfInvalid(raw: Record<string, unknown>): ScheduleTiming;
  /** On save, enable or adoption: `now` looks at once (a feed), `nextSlot` waits for the first slot (a schedule). */
  firstRun: "now" | "nextSlot";
  /**
   * A claimed slot whose outcome was never stored (the worker stopped in between): `true` polls it
   * again on the next tick (a schedule: the slot is its event, keyed by the slot); `false` drops it
   * (a feed's new items stay new until a later poll stores them).
   */
  refireLostSlot: boolean;
  /** One poll, pure apart from `ctx.http`. The engine stores events and state. */
  poll(config: C, state: TriggerState, ctx: PollContext, slot: Date): Promise<PollResult>;
}

/** An event a held connection received (lib/listeners stores it). */
export interface ListenEvent extends NewEvent {
  /**
   * Files kept with the event (mail attachments, sanitized names): stored in the event's
   * transaction, and every entry of `payload.attachments` with the same `filename` gets its signed
   * `url` (lib/files); an entry without a stored file keeps `url: null`.
   */
  files?: EventFileInput[];
  /**
   * Stored as a run that does not execute, with this reason (the run log shows it): what arrived
   * but is not taken, such as an MQTT payload over the webhook size limit. `payload` then says
   * what it was, never the refused content.
   */
  refused?: string;
}

/**
 * Why a held connection is told to stop (`ctx.signal.reason`): the worker stops, another worker
 * took the applet, its trigger changed (`restart`), it was disabled, or deleted (a plug-in with
 * state on a server of its own, an MQTT session, clears it then).
 */
export type ListenStop = "shutdown" | "lost" | "restart" | "disabled" | "deleted";

export interface ListenContext extends PollContext {
  /** Aborted when the connection is to close; its `reason` is a ListenStop. */
  signal: AbortSignal;
  /** A stable id of the applet, for a client id the server remembers between connections. */
  appletId: string;
  /**
   * Stores the events and the new state in one transaction (events deduped per applet on their
   * key, as every trigger's) and resolves after the commit: acknowledge to the server only then.
   * Returns how many runs were queued.
   */
  emit(events: ListenEvent[], state: Partial<Omit<TriggerState, "nextRunAt" | "errorCount" | "lastError">>): Promise<number>;
  /** The connection is up and listening: a previous error is cleared (a recovery alert when one was sent). */
  connected(): Promise<void>;
  /** Waits `ms` or until the signal aborts, whichever is first (tests inject their own). */
  sleep(ms: number): Promise<void>;
}

/**
 * Fed by a connection one worker holds open (lib/listeners, under the applet's job lock so two
 * workers never both listen): an IMAP mailbox in IDLE, an MQTT subscription.
 */
export interface ListenTrigger<C, T extends string> extends TriggerBase<C, T> {
  feed: "listen";
  /**
   * Connects and listens until `ctx.signal` aborts (then resolves). Throws when the connection
   * fails or drops: the engine records the error (the trigger's error, alerts as a failed poll),
   * waits with back-off and calls it again with the state as stored.
   */
  listen(config: C, state: TriggerState, ctx: ListenContext): Promise<void>;
}

/** A trigger plug-in: one file in lib/triggers, one line in lib/triggers/index.ts. */
export type TriggerPlugin<C = Record<string, unknown>, T extends string = string> = RequestTrigger<C, T> | MailTrigger<C, T> | PolledTrigger<C, T> | ListenTrigger<C, T>;

