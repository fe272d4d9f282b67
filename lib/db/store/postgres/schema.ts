import { sql } from "drizzle-orm";
import { bigint, customType, doublePrecision, index, integer, json, pgTable, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

/**
 * The PostgreSQL twin of lib/db/store/sqlite/schema.ts, drizzle-kit's source for drizzle-pg/. The columns keep
 * SQLite's types on purpose, so both engines hand the stores the same row shape (the type test in
 * tests/unit/pg-schema.test.ts fails when the two drift apart):
 * - timestamps are ISO 8601 UTC text, not timestamptz: they compare as strings in the fixed format
 *   and round-trip to the millisecond (timestamptz keeps microseconds, a JavaScript Date does not,
 *   and the claim tokens' fencing compares exact values);
 * - JSON is `json`, not `jsonb`: json keeps the text as stored (jsonb reorders an event payload's
 *   keys), and it is only ever read whole;
 * - booleans are integers 0/1.
 * Database differences beyond this live in the stores (lib/db/store/postgres).
 *
 * Over 400 lines on purpose, as lib/db/store/sqlite/schema.ts: one declaration per table, kept whole.
 */
const timestamps = {
  createdAt: text("created_at").notNull(),
  updatedAt: text("updated_at").notNull(),
};

export const users = pgTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  passwordHash: text("password_hash").notNull(),
  sessionVersion: integer("session_version").notNull().default(1),
  ...timestamps,
});

export const applets = pgTable(
  "applets",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    enabled: integer("enabled").notNull().default(1),
    triggerType: text("trigger_type").notNull(),
    definition: json("definition").notNull(),
    webhookToken: text("webhook_token").notNull().unique(),
    lastFiredAt: text("last_fired_at"),
    runCount: integer("run_count").notNull().default(0),
    failureStreak: integer("failure_streak").notNull().default(0),
    alertOpen: integer("alert_open").notNull().default(0),
    triggerAlertOpen: integer("trigger_alert_open").notNull().default(0),
    alertChannel: json("alert_channel"),
    autoPause: integer("auto_pause"),
    pausedReason: text("paused_reason"),
    pausedAt: text("paused_at"),
    /** When the applet was last disabled, by its owner or by auto-pause (cleared on enable): enabling a schedule says which slots passed meanwhile (lib/triggers/schedule.ts `disabledSlotsNote`). */
    disabledAt: text("disabled_at"),
    /** A JSON array of short labels, for the applets list's tag filter; export carries it. */
    tags: json("tags").notNull().default(sql`'[]'::json`),
    /** "Listen for test event": until this time the next request is kept as a sample; the first clears it. */
    listenUntil: text("listen_until"),
    ...timestamps,
  },
  (t) => [index("applets_trigger_type_idx").on(t.triggerType, t.enabled)],
);

export const triggerState = pgTable(
  "trigger_state",
  {
    appletId: text("applet_id")
      .primaryKey()
      .references(() => applets.id, { onDelete: "cascade" }),
    nextRunAt: text("next_run_at"),
    lastPolledAt: text("last_polled_at"),
    seenKeys: json("seen_keys").notNull().default(sql`'[]'::json`),
    lastValue: json("last_value"),
    etag: text("etag"),
    lastModified: text("last_modified"),
    lastError: text("last_error"),
    errorCount: integer("error_count").notNull().default(0),
    pendingSlot: text("pending_slot"),
    ...timestamps,
  },
  (t) => [
    index("trigger_state_next_run_idx").on(t.nextRunAt),
    index("trigger_state_pending_idx").on(t.pendingSlot).where(sql`${t.pendingSlot} IS NOT NULL`),
  ],
);

export const events = pgTable(
  "events",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id")
      .notNull()
      .references(() => applets.id, { onDelete: "cascade" }),
    source: text("source").notNull(),
    dedupeKey: text("dedupe_key"),
    payload: json("payload").notNull(),
    receivedAt: text("received_at").notNull(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex("events_applet_dedupe_idx")
      .on(t.appletId, t.dedupeKey)
      .where(sql`${t.dedupeKey} IS NOT NULL`),
    index("events_received_idx").on(t.receivedAt),
    // An applet's events by time: its sample events, and the cascade of its delete (0011).
    index("events_applet_received_idx").on(t.appletId, t.receivedAt),
  ],
);

export const runs = pgTable(
  "runs",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id")
      .notNull()
      .references(() => applets.id, { onDelete: "cascade" }),
    eventId: text("event_id")
      .notNull()
      .references(() => events.id, { onDelete: "cascade" }),
    status: text("status").notNull(),
    attempt: integer("attempt").notNull().default(1),
    maxAttempts: integer("max_attempts").notNull().default(5),
    nextAttemptAt: text("next_attempt_at"),
    lockedBy: text("locked_by"),
    lockedAt: text("locked_at"),
    claimToken: text("claim_token"),
    startedAt: text("started_at"),
    finishedAt: text("finished_at"),
    error: text("error"),
    steps: json("steps").notNull().default(sql`'[]'::json`),
    /** Timed runs: the planned run this row executes (its own id; a replay keeps the original's). */
    plannedRunId: text("planned_run_id"),
    /** Timed runs: the one action this run executes; null runs the applet's untimed actions. */
    actionIndex: integer("action_index"),
    /** Timed runs: when it is due (ISO). */
    dueAt: text("due_at"),
    /** Why a timed run was cancelled or skipped (lib/timed/reasons). */
    reason: text("reason"),
    appletVersion: integer("applet_version"),
    /** One run runs at a time per (applet, lane); '' unless the applet's controls say otherwise (lib/queue/controls.ts). */
    lane: text("lane").notNull().default(""),
    /** 1 while the run waits at a wait step of an applet with strict order: it keeps its lane (drizzle 0020 / pg 0024). */
    holdsLane: integer("holds_lane").notNull().default(0),
    ...timestamps,
  },
  (t) => [
    index("runs_applet_created_idx").on(t.appletId, t.createdAt),
    // The claim (lib/db/store/postgres/queue-sql.ts) reads the queued and the running rows only;
    // partial indexes keep those a few pages small however long the history is, as on SQLite. The
    // queued one carries created_at so an applet's head (oldest due, then oldest) is one seek.
    // "applet_id IS NOT NULL" (always true) is there for the planner (drizzle-pg/0015): only a
    // statement that names the applet can read through it, so with statistics that say nothing is
    // queued the claim's walk in due order is not planned as a scan and sort of this index.
    index("runs_queued_idx").on(t.appletId, t.lane, t.nextAttemptAt, t.createdAt).where(sql`${t.status} = 'queued' AND ${t.appletId} IS NOT NULL`),
    // The same rows in due order: the claim's first pass reads the oldest few (drizzle-pg/0009).
    index("runs_due_idx").on(t.nextAttemptAt, t.createdAt, t.id).where(sql`${t.status} = 'queued'`),
    // Unique, unlike SQLite's: "one running run per applet" holds across processes even if two
    // claims race (the loser gets a unique violation and claims again), not only by the claim's SQL.
    // Its "applet_id IS NOT NULL" keeps a finish's lookup by id on the primary key (drizzle-pg/0015).
    // A waiting run of an applet with strict order holds its lane as a running run does (drizzle-pg/0024).
    uniqueIndex("runs_running_idx")
      .on(t.appletId, t.lane)
      .where(sql`(${t.status} = 'running' OR (${t.status} = 'waiting' AND ${t.holdsLane} = 1)) AND ${t.appletId} IS NOT NULL`),
    index("runs_updated_idx").on(t.updatedAt),
    // Waiting runs (parked at a wait step), listed per applet by the run log (drizzle 0019 / pg 0023).
    index("runs_waiting_idx").on(t.appletId, t.updatedAt).where(sql`${t.status} = 'waiting'`),
    index("runs_event_idx").on(t.eventId),
    index("runs_created_idx").on(t.createdAt),
    // The run list filtered by a final status (drizzle-pg/0014). Queued and running runs are not in
    // it: they have their partial indexes above, and a plan made when statistics said "nothing
    // queued" otherwise chose this index for the claim and read every queued run at each step.
    index("runs_status_created_idx").on(t.status, t.createdAt).where(sql`${t.status} NOT IN ('queued', 'running')`),
  ],
);

/** Every save of an applet; see lib/db/store/sqlite/schema.ts appletVersions. */
export const appletVersions = pgTable(
  "applet_versions",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id")
      .notNull()
      .references(() => applets.id, { onDelete: "cascade" }),
    version: integer("version").notNull(),
    name: text("name").notNull(),
    enabled: integer("enabled").notNull(),
    definition: json("definition").notNull(),
    source: text("source").notNull(),
    restoredFrom: integer("restored_from"),
    authorType: text("author_type").notNull(),
    authorId: text("author_id"),
    authorLabel: text("author_label").notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex("applet_versions_applet_version_idx").on(t.appletId, t.version)],
);

export const secrets = pgTable("secrets", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  valueEncrypted: text("value_encrypted").notNull(),
  ...timestamps,
});

export const jobLocks = pgTable("job_locks", {
  name: text("name").primaryKey(),
  lockedBy: text("locked_by"),
  lockedAt: text("locked_at"),
  expiresAt: text("expires_at"),
  lastRunAt: text("last_run_at"),
});

export const workers = pgTable("workers", {
  id: text("id").primaryKey(),
  hostname: text("hostname").notNull(),
  pid: integer("pid").notNull(),
  seenAt: text("seen_at").notNull(),
  leaseUntil: text("lease_until").notNull(),
  fault: text("fault"),
  smtpPort: integer("smtp_port"),
  metrics: text("metrics"),
  /** The machine and pid namespace in which `pid` names this process (lib/queue/liveness.ts); null before drizzle 0015. */
  processScope: text("process_scope"),
  /** PostgreSQL: the key of the session-level advisory lock this worker holds for its life; null while it holds none. */
  sessionLock: integer("session_lock"),
  ...timestamps,
});

/**
 * PostgreSQL only: facts about the database every process must agree with. Holds the fingerprints
 * of SECRETS_KEY and SESSION_SECRET (never the keys), so a process started on another host with a
 * different key refuses to start instead of writing secrets nobody else can read.
 */
export const instance = pgTable("instance", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
  createdAt: text("created_at").notNull(),
});

/**
 * PostgreSQL only: web processes with a live view open (an SSE stream of GET /api/stream), each
 * until its row expires (PostgreSQL's clock; renewed while a stream is open). Run changes are
 * announced (NOTIFY whenthen_runs, drizzle-pg/0016) only while one is here: every notifying commit
 * wakes every listening session of the database (workers' and web processes'), for nothing while
 * no one looks (bench/RESULTS.md, 2026-12-03).
 */
export const liveWatchers = pgTable("live_watchers", {
  id: text("id").primaryKey(),
  until: timestamp("until", { withTimezone: true }).notNull(),
});

/**
 * PostgreSQL only: worker processes with an idle slot, each until its row expires (PostgreSQL's
 * clock; renewed while idle, removed when busy again: lib/queue/wakeups.ts). A run that becomes
 * claimable is announced (NOTIFY whenthen_queued, drizzle-pg/0017) only while one is here. A
 * notifying transaction holds PostgreSQL's one notification lock from its NOTIFY through its
 * commit's WAL flush, so every run's finish announcing itself serialised the commits of all
 * workers: the queue's throughput fell as workers were added (bench/RESULTS.md, 2026-12-03).
 */
export const queueWatchers = pgTable("queue_watchers", {
  id: text("id").primaryKey(),
  until: timestamp("until", { withTimezone: true }).notNull(),
});

/**
 * API tokens (lib/db/store/sqlite/schema.ts apiTokens), so the
 * PostgreSQL migrations already hold the table; same columns and types as SQLite's.
 */
export const apiTokens = pgTable("api_tokens", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  tokenHash: text("token_hash").notNull().unique(),
  prefix: text("prefix").notNull(),
  /** 1: GET requests only. */
  readOnly: integer("read_only").notNull().default(0),
  lastUsedAt: text("last_used_at"),
  /** When it stops being accepted (ISO, UTC); null: never. */
  expiresAt: text("expires_at"),
  ...timestamps,
});

/**
 * Timed actions: the runs @vibedout/automations' planner made, in its own shape (times
 * are epoch milliseconds, as the library's). Each also has its row in `runs` (same id) that the
 * queue executes when the sweep dispatches it.
 */
export const plannedRuns = pgTable(
  "planned_runs",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id")
      .notNull()
      .references(() => applets.id, { onDelete: "cascade" }),
    eventId: text("event_id")
      .notNull()
      .references(() => events.id, { onDelete: "cascade" }),
    actionIndex: integer("action_index").notNull(),
    stepId: text("step_id").notNull(),
    subjectType: text("subject_type").notNull(),
    subjectId: text("subject_id").notNull(),
    subjectVersion: bigint("subject_version", { mode: "number" }).notNull(),
    cancelKey: text("cancel_key").notNull(),
    contactId: text("contact_id"),
    eventType: text("event_type").notNull(),
    anchorAt: bigint("anchor_at", { mode: "number" }),
    dueAt: bigint("due_at", { mode: "number" }).notNull(),
    /** Before quiet hours moved it; null when it was not moved. */
    originalDueAt: bigint("original_due_at", { mode: "number" }),
    expiresAt: bigint("expires_at", { mode: "number" }),
    status: text("status").notNull(),
    reason: text("reason"),
    /** The plan's explanation in plain words (the warning of a no_anchor run). */
    note: text("note"),
    attempts: integer("attempts").notNull().default(0),
    claimToken: text("claim_token"),
    leaseUntil: bigint("lease_until", { mode: "number" }),
    lastError: text("last_error"),
    createdAt: bigint("created_at", { mode: "number" }).notNull(),
    updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
    finishedAt: bigint("finished_at", { mode: "number" }),
  },
  (t) => [
    index("planned_runs_due_idx").on(t.status, t.dueAt, t.id),
    index("planned_runs_lease_idx").on(t.status, t.leaseUntil),
    index("planned_runs_cancel_idx").on(t.cancelKey, t.status, t.subjectVersion),
    index("planned_runs_cap_idx").on(t.appletId, t.contactId, t.status, t.finishedAt),
    index("planned_runs_applet_idx").on(t.appletId, t.dueAt),
    index("planned_runs_event_idx").on(t.eventId),
  ],
);

/** The version each subject (cancel key) has reached: an event of an older version plans nothing. */
export const plannedSubjects = pgTable("planned_subjects", {
  cancelKey: text("cancel_key").primaryKey(),
  version: bigint("version", { mode: "number" }).notNull(),
  updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
});

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => "bytea" });

/** Inbound mail attachments; same columns as SQLite's event_files (lib/db/store/sqlite/schema.ts). */
export const eventFiles = pgTable(
  "event_files",
  {
    eventId: text("event_id").notNull(),
    filename: text("filename").notNull(),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    content: bytea("content").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.filename] })],
);

/** The same as lib/db/store/sqlite/schema.ts alertSettings and alerts. */
export const alertSettings = pgTable("alert_settings", {
  id: text("id").primaryKey(),
  channel: json("channel"),
  windowMinutes: integer("window_minutes").notNull().default(15),
  triggerThreshold: integer("trigger_threshold").notNull().default(3),
  autoPause: integer("auto_pause").notNull().default(0),
  autoPauseAfter: integer("auto_pause_after").notNull().default(5),
  alertOnRetry: integer("alert_on_retry").notNull().default(0),
  ...timestamps,
});

export const alerts = pgTable(
  "alerts",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id").references(() => applets.id, { onDelete: "cascade" }),
    kind: text("kind").notNull(),
    runId: text("run_id"),
    error: text("error"),
    detail: text("detail"),
    status: text("status").notNull().default("pending"),
    foldedInto: text("folded_into"),
    message: text("message"),
    channelType: text("channel_type"),
    providerAnswer: text("provider_answer"),
    lockedUntil: text("locked_until"),
    dispatchedAt: text("dispatched_at"),
    sentAt: text("sent_at"),
    ...timestamps,
  },
  (t) => [
    index("alerts_pending_idx").on(t.appletId, t.createdAt).where(sql`${t.status} IN ('pending', 'sending')`),
    index("alerts_applet_dispatched_idx").on(t.appletId, t.dispatchedAt),
    index("alerts_created_idx").on(t.createdAt),
  ],
);

/** The fire ledger (drizzle-pg/0021); see lib/db/store/sqlite/schema.ts. */
export const fireLedger = pgTable(
  "fire_ledger",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id")
      .notNull()
      .references(() => applets.id, { onDelete: "cascade" }),
    at: text("at").notNull(),
    outcome: text("outcome").notNull(),
    detail: text("detail").notNull(),
    runId: text("run_id"),
    dedupeKey: text("dedupe_key"),
    count: integer("count").notNull().default(1),
    bucket: text("bucket"),
    ...timestamps,
  },
  (t) => [
    index("fire_ledger_applet_at_idx").on(t.appletId, t.at),
    index("fire_ledger_run_idx").on(t.runId).where(sql`${t.runId} IS NOT NULL`),
    uniqueIndex("fire_ledger_bucket_idx").on(t.appletId, t.bucket).where(sql`${t.bucket} IS NOT NULL`),
    index("fire_ledger_updated_idx").on(t.updatedAt),
  ],
);

/** Expected activity per applet (drizzle-pg/0021); see lib/db/store/sqlite/schema.ts. */
export const appletActivity = pgTable("applet_activity", {
  appletId: text("applet_id")
    .primaryKey()
    .references(() => applets.id, { onDelete: "cascade" }),
  expectEveryHours: doublePrecision("expect_every_hours"),
  expectSince: text("expect_since"),
  quietSince: text("quiet_since"),
  quietDetail: text("quiet_detail"),
  ...timestamps,
});

/** Wait steps (drizzle-pg/0023): a waiting run is its `runs` row (status 'waiting') plus this row (lib/db/store: WaitsStore). */
export const runWaits = pgTable(
  "run_waits",
  {
    runId: text("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    /** The run's n-th wait (its links name it). */
    seq: integer("seq").notNull(),
    appletId: text("applet_id").notNull(),
    stepId: text("step_id").notNull(),
    /** delay | until | for_call | for_approval */
    kind: text("kind").notNull(),
    /** When the tick resumes it (its time or its timeout, the earlier), and as which. */
    resumeAt: text("resume_at"),
    resumeAs: text("resume_as"),
    timeoutAt: text("timeout_at"),
    detail: text("detail"),
    /** Set exactly once: time | timeout | called | approved | denied | resumed | cancelled. */
    resolution: text("resolution"),
    resolvedAt: text("resolved_at"),
    resolvedBy: text("resolved_by"),
    output: text("output"),
    ...timestamps,
  },
  (t) => [primaryKey({ columns: [t.runId, t.seq] }), index("run_waits_due_idx").on(t.resumeAt).where(sql`${t.resolution} IS NULL AND ${t.resumeAt} IS NOT NULL`)],
);
