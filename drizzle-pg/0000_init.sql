CREATE TABLE "applets" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"enabled" integer DEFAULT 1 NOT NULL,
	"trigger_type" text NOT NULL,
	"definition" json NOT NULL,
	"webhook_token" text NOT NULL,
	"last_fired_at" text,
	"run_count" integer DEFAULT 0 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "applets_webhook_token_unique" UNIQUE("webhook_token")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"applet_id" text NOT NULL,
	"source" text NOT NULL,
	"dedupe_key" text,
	"payload" json NOT NULL,
	"received_at" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "instance" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"created_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "job_locks" (
	"name" text PRIMARY KEY NOT NULL,
	"locked_by" text,
	"locked_at" text,
	"expires_at" text,
	"last_run_at" text
);
--> statement-breakpoint
CREATE TABLE "runs" (
	"id" text PRIMARY KEY NOT NULL,
	"applet_id" text NOT NULL,
	"event_id" text NOT NULL,
	"status" text NOT NULL,
	"attempt" integer DEFAULT 1 NOT NULL,
	"max_attempts" integer DEFAULT 5 NOT NULL,
	"next_attempt_at" text,
	"locked_by" text,
	"locked_at" text,
	"claim_token" text,
	"started_at" text,
	"finished_at" text,
	"error" text,
	"steps" json DEFAULT '[]'::json NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "secrets" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"value_encrypted" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "secrets_name_unique" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "trigger_state" (
	"applet_id" text PRIMARY KEY NOT NULL,
	"next_run_at" text,
	"last_polled_at" text,
	"seen_keys" json DEFAULT '[]'::json NOT NULL,
	"last_value" json,
	"etag" text,
	"last_modified" text,
	"last_error" text,
	"error_count" integer DEFAULT 0 NOT NULL,
	"pending_slot" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"session_version" integer DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "users_email_unique" UNIQUE("email")
);
--> statement-breakpoint
CREATE TABLE "workers" (
	"id" text PRIMARY KEY NOT NULL,
	"hostname" text NOT NULL,
	"pid" integer NOT NULL,
	"seen_at" text NOT NULL,
	"lease_until" text NOT NULL,
	"fault" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_applet_id_applets_id_fk" FOREIGN KEY ("applet_id") REFERENCES "public"."applets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_applet_id_applets_id_fk" FOREIGN KEY ("applet_id") REFERENCES "public"."applets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trigger_state" ADD CONSTRAINT "trigger_state_applet_id_applets_id_fk" FOREIGN KEY ("applet_id") REFERENCES "public"."applets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "applets_trigger_type_idx" ON "applets" USING btree ("trigger_type","enabled");--> statement-breakpoint
CREATE UNIQUE INDEX "events_applet_dedupe_idx" ON "events" USING btree ("applet_id","dedupe_key") WHERE "events"."dedupe_key" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "events_received_idx" ON "events" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "runs_applet_created_idx" ON "runs" USING btree ("applet_id","created_at");--> statement-breakpoint
CREATE INDEX "runs_queued_idx" ON "runs" USING btree ("applet_id","next_attempt_at","created_at") WHERE "runs"."status" = 'queued';--> statement-breakpoint
CREATE UNIQUE INDEX "runs_running_idx" ON "runs" USING btree ("applet_id") WHERE "runs"."status" = 'running';--> statement-breakpoint
CREATE INDEX "runs_updated_idx" ON "runs" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "runs_event_idx" ON "runs" USING btree ("event_id");--> statement-breakpoint
CREATE INDEX "runs_created_idx" ON "runs" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "trigger_state_next_run_idx" ON "trigger_state" USING btree ("next_run_at");--> statement-breakpoint
CREATE INDEX "trigger_state_pending_idx" ON "trigger_state" USING btree ("pending_slot") WHERE "trigger_state"."pending_slot" IS NOT NULL;