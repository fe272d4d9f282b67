/**
 * The types of @vibedout/automations, with no runtime code, so a package that only describes rules
 * or runs (a form, an API schema) can import them without the planner.
 */

/** Milliseconds, or text such as "2h", "-24h", "1h30m", "90s", "500ms", "1d", "1w". */
export type Duration = number | string;

export type ConditionOp =
  | "eq"
  | "ne"
  | "gt"
  | "gte"
  | "lt"
  | "lte"
  | "in"
  | "not_in"
  | "contains"
  | "not_contains"
  | "starts_with"
  | "ends_with"
  | "matches"
  | "exists"
  | "is_empty";

export interface Condition {
  /** A path that starts at `payload.`, `contact.` or `event.`. */
  field: string;
  op: ConditionOp;
  /**
   * For `exists` and `is_empty`: true (the default) or false. For `in` / `not_in`: a list. For
   * `matches`: an RE2 pattern. For `starts_with` / `ends_with`: text.
   */
  value?: unknown;
  /** Text compares lower-cased on both sides (and `matches` is case-insensitive). */
  ignore_case?: boolean;
}

/** Flat: every `all` holds and, when `any` is given and not empty, at least one `any` holds. */
export interface Conditions {
  all?: Condition[];
  any?: Condition[];
}

export interface RuleStep {
  /** Stable; part of every run's id. Default: the step's position ("0", "1", …). */
  id: string;
  /** The name an action handler is registered under. */
  action: string;
  /** From the anchor: "-24h" is a day before, "2h" two hours after. Default 0. */
  offset?: Duration;
  /** "event" (when the event happened, the default) or a path into the payload holding a time. */
  anchor?: string;
  params?: Record<string, unknown>;
  /** How far past due the step may still run. Default 1 hour; null: never too late. */
  lateness?: Duration | null;
}

export type QuietHoursMode = "defer" | "skip";

export interface QuietHours {
  /** "HH:MM", 24-hour, on the contact's clock. */
  start: string;
  end: string;
  /** Used when the contact has no zone. */
  timezone?: string;
  /** "defer" (the default): move to the end of the window. "skip": drop the step. */
  mode?: QuietHoursMode;
}

export interface FrequencyCap {
  /** Runs of this rule sent to one contact within `per`. */
  max: number;
  per: Duration;
}

export interface Rule {
  id: string;
  enabled: boolean;
  version?: number;
  name?: string;
  trigger: { events: string[] };
  conditions?: Conditions;
  steps: RuleStep[];
  quietHours?: QuietHours;
  frequencyCap?: FrequencyCap;
  /** Used when neither the contact nor the quiet hours name a zone. */
  timezone?: string;
}

/** What `parseRule` accepts: a rule as a person writes it (step ids and `enabled` optional). */
export interface RuleInput extends Omit<Rule, "enabled" | "steps"> {
  enabled?: boolean;
  steps: Array<Omit<RuleStep, "id"> & { id?: string }>;
}

export type RuleProblemCode =
  | "invalid_type"
  | "required"
  | "unknown_key"
  | "invalid_id"
  | "empty"
  | "invalid_duration"
  | "negative_duration"
  | "invalid_timezone"
  | "invalid_clock_time"
  | "empty_window"
  | "invalid_path"
  | "unknown_op"
  | "invalid_value"
  | "invalid_pattern"
  | "duplicate";

export interface RuleProblem {
  /** Where, e.g. "steps.0.offset" or "conditions.all.2.op"; "" for the rule itself. */
  path: string;
  code: RuleProblemCode;
  message: string;
}

export type ParseRuleResult = { ok: true; rule: Rule } | { ok: false; problems: RuleProblem[] };

export interface Subject {
  type: string;
  id: string;
  /**
   * Must grow on every change that should supersede a plan (a row version bumped by each write,
   * or the row's updatedAt in ms). A superseding event cancels only runs of a lower version.
   */
  version: number;
}

export interface RuleEvent {
  /** The outbox row, kept on each run. */
  id: string;
  type: string;
  /** Epoch ms or ISO 8601 text with a zone. */
  occurredAt: number | string;
  subject: Subject;
  contactId?: string | null;
  payload?: Record<string, unknown>;
  /** Names the subject whose plans supersede each other. Default "<subject.type>:<subject.id>". */
  cancelKey?: string;
}

export interface Contact {
  id: string;
  /** IANA zone; the first choice for quiet hours. */
  timezone?: string | null;
  /** Read by conditions as `contact.<field>`. */
  fields?: Record<string, unknown>;
}

export interface PlanOptions {
  contact?: Contact | null;
  /** This event replaces what was planned for its subject at older versions (a move, a cancellation). */
  supersedes?: boolean;
}

export type RunStatus = "pending" | "running" | "done" | "failed" | "cancelled" | "skipped";

/** Why a run was skipped or cancelled. Guards and actions may add their own. */
export type RunReason =
  | "superseded"
  | "late"
  | "no_anchor"
  | "quiet_hours"
  | "rule_disabled"
  | "frequency_cap"
  | "stale"
  | "no_consent"
  | (string & {});

/** A run as the planner writes it: what to do, when, for whom, and why if not at all. */
export interface PlannedRun {
  id: string;
  ruleId: string;
  stepId: string;
  action: string;
  params: Record<string, unknown>;
  subjectType: string;
  subjectId: string;
  subjectVersion: number;
  cancelKey: string;
  contactId: string | null;
  eventId: string;
  eventType: string;
  /** The anchor as an instant; null when the step had none it could read. */
  anchorAt: number | null;
  dueAt: number;
  /** The end of the lateness window; null: never too late. */
  expiresAt: number | null;
  /** "pending", or "skipped" with a reason decided at plan time. */
  status: "pending" | "skipped";
  reason: RunReason | null;
  createdAt: number;
}

/** A run as stored. */
export interface Run extends Omit<PlannedRun, "status"> {
  status: RunStatus;
  attempts: number;
  claimToken: string | null;
  leaseUntil: number | null;
  lastError: string | null;
  messageId: string | null;
  updatedAt: number;
  finishedAt: number | null;
}

/** A run claimed by a sweep: it holds the token every settle is conditional on. */
export interface ClaimedRun extends Run {
  status: "running";
  claimToken: string;
  leaseUntil: number;
}

export interface CancelInstruction {
  key: string;
  /** Pending runs under the key with a lower subject version are cancelled. */
  belowVersion: number;
  reason: RunReason;
}

export interface Plan {
  runs: PlannedRun[];
  /** Set when the event supersedes: cancel older versions of the subject. */
  cancel: CancelInstruction | null;
  /** The version the subject reaches with this event; recorded so later, older events plan nothing. */
  subject: { key: string; version: number };
  /** The `now` the plan was made at; the time its writes are stamped with. */
  at: number;
}

export interface CancelOptions {
  /** Cancel pending runs of versions below this one, and record it as reached. */
  version: number;
  reason?: RunReason;
  now: number;
}

export interface CountRecentQuery {
  ruleId: string;
  contactId: string;
  /** Count runs sent at or after this instant. */
  since: number;
  /**
   * Also count runs another sweep holds right now (live lease at `now`) that sort before this
   * run, by due time then id.
   */
  inFlightBefore?: { dueAt: number; id: string; now: number };
}

export interface ActionResult {
  messageId?: string;
}

export interface RetryOptions {
  /** Stored as the run's lastError; its `retryAfterMs` (a RetryableActionError's) is a hint like the one below. */
  error?: unknown;
  /** The provider's hint; the wait is the longest of the backoff curve, this and the error's, up to a day. */
  retryAfterMs?: number;
}

export type RetryOutcome = "retry" | "failed" | "lost";

export interface SchedulerOptions {
  /** Default 5. */
  maxAttempts?: number;
  /** Default 10 minutes: a sweep must settle its batch within it. */
  leaseMs?: number;
  /** Default 1 minute doubling to 1 hour. */
  backoff?: { baseMs?: number; maxMs?: number };
}

/**
 * The seam between the planner/sweep and a store. `Write` is whatever the store's batch takes
 * (a D1PreparedStatement on D1), so plans go into the caller's own transaction.
 */
export interface Scheduler<Write = unknown> {
  schedule(runs: readonly PlannedRun[]): Write[];
  cancel(key: string, options: CancelOptions): Write[];
  apply(plan: Plan): Write[];
  claimDue(now: number, limit?: number): Promise<ClaimedRun[]>;
  complete(run: ClaimedRun, now: number, result?: ActionResult): Promise<boolean>;
  skip(run: ClaimedRun, now: number, reason: RunReason): Promise<boolean>;
  fail(run: ClaimedRun, now: number, error?: unknown): Promise<boolean>;
  retry(run: ClaimedRun, now: number, options?: RetryOptions): Promise<RetryOutcome>;
  /** Back for later; the attempt is not counted. */
  defer(run: ClaimedRun, now: number, untilMs: number): Promise<boolean>;
  countRecent(query: CountRecentQuery): Promise<number>;
  get(id: string): Promise<Run | null>;
  /** Deletes finished runs and version records last touched before `before`; returns runs deleted. */
  purgeFinished(before: number): Promise<number>;
}

export interface RuleStore {
  get(id: string): Promise<Rule | null>;
  list(): Promise<Rule[]>;
  put(rule: Rule, now: number): Promise<void>;
  delete(id: string): Promise<boolean>;
}

/** What an action may answer besides returning normally (done) or throwing (retry / fail). */
export type ActionOutcome = void | undefined | ActionResult | { skip: RunReason } | { defer: number };

export interface ActionContext {
  /** The sweep's time when the action started. */
  now: number;
  /** 1 on the first attempt. */
  attempt: number;
}

export type ActionHandler = (run: ClaimedRun, context: ActionContext) => Promise<ActionOutcome> | ActionOutcome;

/** Answers a reason to skip the run, or nothing to let it pass. */
export type Guard = (run: ClaimedRun, context: { now: number; rule: Rule }) => Promise<RunReason | null | undefined | void> | RunReason | null | undefined | void;

export interface SweepOptions {
  scheduler: Scheduler<unknown>;
  loadRule: (id: string) => Promise<Rule | null> | Rule | null;
  actions: Record<string, ActionHandler>;
  guards?: Guard[];
  /** The sweep's time; default clock(). */
  now?: number;
  /** How many runs to claim at once. Default 25. */
  limit?: number;
  /** Measures the time that passes while the sweep works. Default Date.now. */
  clock?: () => number;
}

export interface SweepReport {
  claimed: number;
  done: number;
  skipped: number;
  failed: number;
  retried: number;
  deferred: number;
  /** Runs whose lease ran out before they were settled or started; the next claim takes them. */
  lost: number;
}

export type MessageStatus = "queued" | "sent" | "deferred" | "delivered" | "read" | "rejected" | "failed" | "bounced" | "complained" | "received";
export type MessageDirection = "inbound" | "outbound";

export interface MessageEventPayload {
  channel: string;
  direction: MessageDirection;
  /** The channel's own id, the same on every event about this message. */
  messageId: string;
  status: MessageStatus;
  /** ISO 8601. */
  at: string;
  address?: string;
  /** At most 160 characters. */
  preview?: string;
  /** The automation run that sent it, if any. */
  runId?: string;
  error?: string;
}

export type AudienceExclusionReason = "no_consent" | "revoked" | "blocked" | "unreachable" | "no_address";

export interface AudienceRequest {
  channel: string;
  /** What the messages are for, e.g. "marketing" or "transactional"; consent is judged against it. */
  purpose: string;
  tag: string | null;
  /** The id of the last contact of the previous page; null for the first page. */
  after: string | null;
  limit: number;
  /** The action that receives { ...deliverParams, page }. */
  deliverTo: string;
  deliverParams: Record<string, unknown>;
}

export interface AudienceMember {
  id: string;
  address: string;
  name?: string;
  timezone?: string;
  fields?: Record<string, unknown>;
}

export interface AudiencePage {
  channel: string;
  purpose: string;
  tag: string | null;
  after: string | null;
  contacts: AudienceMember[];
  /** The id to continue from; null at the end. */
  next: string | null;
  excluded: Partial<Record<AudienceExclusionReason, number>>;
}
