/**
 * The package's tables as Drizzle (SQLite / D1) tables, for your schema barrel. They describe the
 * tables AUTOMATIONS_MIGRATION_STATEMENTS creates; the migration stays the source of truth.
 */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const automationRule = sqliteTable("automation_rule", {
  id: text("id").primaryKey().notNull(),
  enabled: integer("enabled", { mode: "boolean" }).notNull().default(false),
  version: integer("version"),
  definition: text("definition").notNull(),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const automationRun = sqliteTable(
  "automation_run",
  {
    id: text("id").primaryKey().notNull(),
    ruleId: text("rule_id").notNull(),
    stepId: text("step_id").notNull(),
    action: text("action").notNull(),
    params: text("params").notNull().default("{}"),
    subjectType: text("subject_type").notNull(),
    subjectId: text("subject_id").notNull(),
    subjectVersion: integer("subject_version").notNull(),
    cancelKey: text("cancel_key").notNull(),
    contactId: text("contact_id"),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    anchorAt: integer("anchor_at"),
    dueAt: integer("due_at").notNull(),
    expiresAt: integer("expires_at"),
    status: text("status", { enum: ["pending", "running", "done", "failed", "cancelled", "skipped"] }).notNull(),
    reason: text("reason"),
    attempts: integer("attempts").notNull().default(0),
    claimToken: text("claim_token"),
    leaseUntil: integer("lease_until"),
    lastError: text("last_error"),
    messageId: text("message_id"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (t) => [
    index("automation_run_due").on(t.status, t.dueAt, t.id),
    index("automation_run_lease").on(t.status, t.leaseUntil),
    index("automation_run_cancel").on(t.cancelKey, t.status, t.subjectVersion),
    index("automation_run_cap").on(t.ruleId, t.contactId, t.status, t.finishedAt),
    index("automation_run_finished").on(t.status, t.updatedAt),
  ],
);

export const automationSubject = sqliteTable("automation_subject", {
  cancelKey: text("cancel_key").primaryKey().notNull(),
  version: integer("version").notNull(),
  updatedAt: integer("updated_at").notNull(),
});
