import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * SQLite types only (spec "Data model"): text, integer, real. Timestamps are ISO 8601 UTC strings,
 * which sort and compare as strings because the format is fixed. JSON is text in json mode.
 * Booleans are integers 0/1. Every table has id (uuid text), created_at, updated_at.
 *
 * Over 400 lines on purpose: one declaration per table, read side by side with the migrations;
 * splitting it would only scatter the data model.
 */
const timestamps = {
  createdAt: text("created_at").notNull(),
  updatedAt: text("updated_at").notNull(),
};

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  passwordHash: text("password_hash").notNull(),
  /** Bumped on logout / password change: every cookie signed with an older version is refused. */
  sessionVersion: integer("session_version").notNull().default(1),
  ...timestamps,
});

export const applets = sqliteTable(
  "applets",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    enabled: integer("enabled").notNull().default(1),
    triggerType: text("trigger_type").notNull(),
    definition: text("definition", { mode: "json" }).notNull(),
    webhookToken: text("webhook_token").notNull().unique(),
    lastFiredAt: text("last_fired_at"),
    runCount: integer("run_count").notNull().default(0),
    /** Consecutive failed or dead runs (auto-pause counts them); a succeeded run resets it. */
    failureStreak: integer("failure_streak").notNull().default(0),
    /** 1 while a failure alert went out and the applet has not succeeded since (a recovery notice is due). */
    alertOpen: integer("alert_open").notNull().default(0),
    /** The same for its trigger's consecutive failed checks. */
    triggerAlertOpen: integer("trigger_alert_open").notNull().default(0),
    /** Per-applet alert channel: null = the Settings channel, {"mode":"none"} = no alerts, or {"type","config"}. */
    alertChannel: text("alert_channel", { mode: "json" }),
    /** Auto-pause: null = the Settings default, 0 off, 1 on. */
    autoPause: integer("auto_pause"),
    /** Why the applet was disabled by auto-pause (cleared on enable), and when. */
    pausedReason: text("paused_reason"),
    pausedAt: text("paused_at"),
    /** When the applet was last disabled, by its owner or by auto-pause (cleared on enable): enabling a schedule says which slots passed meanwhile (lib/triggers/schedule.ts `disabledSlotsNote`). */
    disabledAt: text("disabled_at"),
    /** A JSON array of short labels, for the applets list's tag filter; export carries it. */
    tags: text("tags", { mode: "json" }).notNull().default(sql`'[]'`),
    /** "Listen for test event": until this time the next request is kept as a sample; the first clears it. */
    listenUntil: text("listen_until"),
    ...timestamps,
  },
  (t) => [index("applets_trigger_type_idx").on(t.triggerType, t.enabled)],
);

/**
 * SQLite only: a counter that drizzle/0013's triggers move on every change of an applet's hook
 * columns and every delete, so the web process can keep each webhook's applet row
 * (lib/db/store/sqlite/hook-cache.ts). One row, id 1.
 */
export const hookChanges = sqliteTable("hook_changes", {
  id: integer("id").primaryKey(),
  n: integer("n").notNull().default(0),
});

export const triggerState = sqliteTable(
  "trigger_state",
  {
    appletId: text("applet_id")
      .primaryKey()
      .references(() => applets.id, { onDelete: "cascade" }),
    nextRunAt: text("next_run_at"),
    lastPolledAt: text("last_polled_at"),
    seenKeys: text("seen_keys", { mode: "json" }).notNull().default(sql`'[]'`),
    lastValue: text("last_value", { mode: "json" }),
    etag: text("etag"),
    lastModified: text("last_modified"),
    lastError: text("last_error"),
    /** Consecutive failed polls; RSS backs off to 60 minutes after 3. */
    errorCount: integer("error_count").notNull().default(0),
    /**
     * The slot a worker claimed and has not yet stored the outcome of. Set by the claim, cleared in
     * the transaction that stores the poll's events: a worker killed in between leaves it behind,
     * and the next tick fires that slot (deduped on the slot), so a schedule never loses a fire.
     */
    pendingSlot: text("pending_slot"),
    ...timestamps,
  },
  (t) => [
    index("trigger_state_next_run_idx").on(t.nextRunAt),
    // Every tick looks for pending slots; almost always there are none.
    index("trigger_state_pending_idx").on(t.pendingSlot).where(sql`${t.pendingSlot} IS NOT NULL`),
  ],
);

export const events = sqliteTable(
  "events",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id")
      .notNull()
      .references(() => applets.id, { onDelete: "cascade" }),
    source: text("source").notNull(),
    dedupeKey: text("dedupe_key"),
    payload: text("payload", { mode: "json" }).notNull(),
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

export const runs = sqliteTable(
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
    /** Fences every settle: a holder whose lease was taken over changes nothing (DESIGN.md). */
    claimToken: text("claim_token"),
    startedAt: text("started_at"),
    finishedAt: text("finished_at"),
    error: text("error"),
    steps: text("steps", { mode: "json" }).notNull().default(sql`'[]'`),
    /** Timed runs: the planned run this row executes (its own id; a replay keeps the original's). */
    plannedRunId: text("planned_run_id"),
    /** Timed runs: the one action this run executes; null runs the applet's untimed actions. */
    actionIndex: integer("action_index"),
    /** Timed runs: when it is due (ISO). */
    dueAt: text("due_at"),
    /** Why a timed run was cancelled or skipped (lib/timed/reasons). */
    reason: text("reason"),
    /**
     * The applet version (applet_versions.version) this run executes with: set by the claim, so a
     * retry records the version of its latest attempt; a skipped run gets the version current at
     * ingest. Null: not claimed yet, or a run from before version history.
     */
    appletVersion: integer("applet_version"),
    /** One run runs at a time per (applet, lane); '' unless the applet's controls say otherwise (lib/queue/controls.ts). */
    lane: text("lane").notNull().default(""),
    /** 1 while the run waits at a wait step of an applet with strict order: it keeps its lane (drizzle 0020 / pg 0024). */
    holdsLane: integer("holds_lane").notNull().default(0),
    ...timestamps,
  },
  (t) => [
    index("runs_applet_created_idx").on(t.appletId, t.createdAt),
    // The claim walks the applets' lanes that have queued runs (a loose index scan) and checks that none
    // of them is running. Partial indexes hold only the queued and the running rows, so they stay
    // a few pages small when the queue is short, and a finished run leaves them instead of moving
    // to another part of a full-table index on every status change.
    index("runs_queued_idx").on(t.appletId, t.lane, t.nextAttemptAt).where(sql`${t.status} = 'queued'`),
    // A waiting run of an applet with strict order holds its lane as a running run does (drizzle 0020).
    index("runs_running_idx").on(t.appletId, t.lane).where(sql`${t.status} = 'running' OR (${t.status} = 'waiting' AND ${t.holdsLane} = 1)`),
    index("runs_updated_idx").on(t.updatedAt),
    // Waiting runs (parked at a wait step), listed per applet by the run log (drizzle 0019 / pg 0023).
    index("runs_waiting_idx").on(t.appletId, t.updatedAt).where(sql`${t.status} = 'waiting'`),
    index("runs_event_idx").on(t.eventId),
    index("runs_created_idx").on(t.createdAt),
    index("runs_status_created_idx").on(t.status, t.createdAt),
  ],
);

/**
 * Every save of an applet: the whole definition, name and enabled state as saved, who
 * saved it and how. `version` counts from 1 per applet; the highest is the applet's current
 * definition. Written in the transaction of the save (lib/db/store applets.insert/update).
 */
export const appletVersions = sqliteTable(
  "applet_versions",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id")
      .notNull()
      .references(() => applets.id, { onDelete: "cascade" }),
    version: integer("version").notNull(),
    name: text("name").notNull(),
    enabled: integer("enabled").notNull(),
    definition: text("definition", { mode: "json" }).notNull(),
    /** create | save | restore | import | duplicate | backfill (the first version the migration made of an older applet). */
    source: text("source").notNull(),
    /** restore: the version it restored. */
    restoredFrom: integer("restored_from"),
    /** user | token | system; the id and a label (email, token name) as they were at the save. */
    authorType: text("author_type").notNull(),
    authorId: text("author_id"),
    authorLabel: text("author_label").notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex("applet_versions_applet_version_idx").on(t.appletId, t.version)],
);

export const secrets = sqliteTable("secrets", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  valueEncrypted: text("value_encrypted").notNull(),
  ...timestamps,
});

export const jobLocks = sqliteTable("job_locks", {
  name: text("name").primaryKey(),
  lockedBy: text("locked_by"),
  lockedAt: text("locked_at"),
  expiresAt: text("expires_at"),
  lastRunAt: text("last_run_at"),
});

/**
 * One row per running worker process, renewed by its heartbeat. A run whose `locked_by` names a
 * worker without a live lease (`lease_until` passed, or no row at all: it crashed, or the database
 * was restored from a backup) goes back to the queue at once; a live worker's run only after the
 * stuck-run bound (lib/queue/loop).
 */
export const workers = sqliteTable("workers", {
  /** host:pid:random, new on every start, so a restarted process never passes for its predecessor. */
  id: text("id").primaryKey(),
  hostname: text("hostname").notNull(),
  pid: integer("pid").notNull(),
  seenAt: text("seen_at").notNull(),
  leaseUntil: text("lease_until").notNull(),
  /** What the worker could not do at its last heartbeat (a full disk, say); null when healthy. */
  fault: text("fault"),
  /** The port its SMTP receiver listens on; null when it runs none (INBOUND_EMAIL=false) or it stopped listening. */
  smtpPort: integer("smtp_port"),
  /** Its in-memory counters (lib/metrics snapshot JSON) at the last heartbeat, for GET /metrics. */
  metrics: text("metrics"),
  /** The machine and pid namespace in which `pid` names this process (lib/queue/liveness.ts); null before drizzle 0015. */
  processScope: text("process_scope"),
  /** PostgreSQL: the key of the session-level advisory lock this worker holds for its life; null while it holds none. */
  sessionLock: integer("session_lock"),
  ...timestamps,
});

export type RunRow = typeof runs.$inferSelect;
export type EventRow = typeof events.$inferSelect;

/**
 * API tokens for scripts and the CLI (`Authorization: Bearer wt_…`). Only a SHA-256 of the token is
 * kept (a token is 256 random bits, so a plain hash is enough); `prefix` is what lists show.
 */
export const apiTokens = sqliteTable("api_tokens", {
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
export const plannedRuns = sqliteTable(
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
    subjectVersion: integer("subject_version").notNull(),
    cancelKey: text("cancel_key").notNull(),
    contactId: text("contact_id"),
    eventType: text("event_type").notNull(),
    anchorAt: integer("anchor_at"),
    dueAt: integer("due_at").notNull(),
    /** Before quiet hours moved it; null when it was not moved. */
    originalDueAt: integer("original_due_at"),
    expiresAt: integer("expires_at"),
    status: text("status").notNull(),
    reason: text("reason"),
    /** The plan's explanation in plain words (the warning of a no_anchor run). */
    note: text("note"),
    attempts: integer("attempts").notNull().default(0),
    claimToken: text("claim_token"),
    leaseUntil: integer("lease_until"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    finishedAt: integer("finished_at"),
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
export const plannedSubjects = sqliteTable("planned_subjects", {
  cancelKey: text("cancel_key").primaryKey(),
  version: integer("version").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Inbound mail attachments (nothing of a run lives only on one host's disk). One row per
 * file of an event, saved by the worker that received the message, served by any web process
 * (lib/files/serve.ts). No foreign key: the files are stored before their event, which may then
 * turn out a duplicate; applet deletion and retention delete them with their events.
 */
export const eventFiles = sqliteTable(
  "event_files",
  {
    eventId: text("event_id").notNull(),
    /** Sanitized (lib/files/sanitize) and unique within the event. */
    filename: text("filename").notNull(),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    content: blob("content", { mode: "buffer" }).notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.filename] })],
);

/** The install's alert settings: one row, id `default`, created on first save. */
export const alertSettings = sqliteTable("alert_settings", {
  id: text("id").primaryKey(),
  /** {"type","config"} of an action plug-in (email, slack, discord, push, http); null: no channel. */
  channel: text("channel", { mode: "json" }),
  windowMinutes: integer("window_minutes").notNull().default(15),
  triggerThreshold: integer("trigger_threshold").notNull().default(3),
  autoPause: integer("auto_pause").notNull().default(0),
  autoPauseAfter: integer("auto_pause_after").notNull().default(5),
  /** 1: alert on a run's first failed attempt when a retry is scheduled, not only when it is dead. */
  alertOnRetry: integer("alert_on_retry").notNull().default(0),
  ...timestamps,
});

/**
 * Alerts: the durable record of every failure, recovery and pause to tell someone
 * about, written in the transaction that settles the run (or stores the poll). The worker's
 * dispatcher sends them, folding those of one applet inside the window into the next message.
 */
export const alerts = sqliteTable(
  "alerts",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id").references(() => applets.id, { onDelete: "cascade" }),
    /** failure | trigger | recovery | paused | test */
    kind: text("kind").notNull(),
    runId: text("run_id"),
    error: text("error"),
    /** Kind-specific facts (JSON text): the run's status, the streak, the applet name. */
    detail: text("detail"),
    /** pending | sending | sent | failed | folded | skipped */
    status: text("status").notNull().default("pending"),
    /** For a folded alert: the alert whose message counted it. */
    foldedInto: text("folded_into"),
    message: text("message"),
    channelType: text("channel_type"),
    /** The provider's answer when the send failed (redacted). */
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

/**
 * The fire ledger (drizzle/0017): fires that did not become an ordinary run, or that a run alone
 * does not explain. A fire that became a run is listed from events and runs (lib/db/store/ledger-sql.ts).
 */
export const fireLedger = sqliteTable(
  "fire_ledger",
  {
    id: text("id").primaryKey(),
    appletId: text("applet_id")
      .notNull()
      .references(() => applets.id, { onDelete: "cascade" }),
    /** When the fire was due or arrived. */
    at: text("at").notNull(),
    /** late | missed | dropped_catchup | deduplicated | refused | paused | disabled (lib/db/store/types LEDGER_OUTCOMES). */
    outcome: text("outcome").notNull(),
    detail: text("detail").notNull(),
    runId: text("run_id"),
    dedupeKey: text("dedupe_key"),
    /** Fires this row stands for: counted refusals per minute, "…and N more" missed slots. */
    count: integer("count").notNull().default(1),
    /** Set on counted rows: one row per applet and bucket (reason and minute). */
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

/** Expected activity per applet (drizzle/0017): the user's expectation and the open quiet alert. */
export const appletActivity = sqliteTable("applet_activity", {
  appletId: text("applet_id")
    .primaryKey()
    .references(() => applets.id, { onDelete: "cascade" }),
  expectEveryHours: real("expect_every_hours"),
  expectSince: text("expect_since"),
  quietSince: text("quiet_since"),
  quietDetail: text("quiet_detail"),
  ...timestamps,
});

/** Wait steps (drizzle/0019): a waiting run is its `runs` row (status 'waiting') plus this row (lib/db/store: WaitsStore). */
export const runWaits = sqliteTable(
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
