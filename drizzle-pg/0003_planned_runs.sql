ALTER TABLE "runs" ADD COLUMN "planned_run_id" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "action_index" integer;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "due_at" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "reason" text;--> statement-breakpoint
CREATE TABLE "planned_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"applet_id" text NOT NULL,
	"event_id" text NOT NULL,
	"action_index" integer NOT NULL,
	"step_id" text NOT NULL,
	"subject_type" text NOT NULL,
	"subject_id" text NOT NULL,
	"subject_version" bigint NOT NULL,
	"cancel_key" text NOT NULL,
	"contact_id" text,
	"event_type" text NOT NULL,
	"anchor_at" bigint,
	"due_at" bigint NOT NULL,
	"original_due_at" bigint,
	"expires_at" bigint,
	"status" text NOT NULL,
	"reason" text,
	"note" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"claim_token" text,
	"lease_until" bigint,
	"last_error" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"finished_at" bigint
);
--> statement-breakpoint
ALTER TABLE "planned_runs" ADD CONSTRAINT "planned_runs_applet_id_applets_id_fk" FOREIGN KEY ("applet_id") REFERENCES "public"."applets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "planned_runs" ADD CONSTRAINT "planned_runs_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "planned_runs_due_idx" ON "planned_runs" USING btree ("status","due_at","id");--> statement-breakpoint
CREATE INDEX "planned_runs_lease_idx" ON "planned_runs" USING btree ("status","lease_until");--> statement-breakpoint
CREATE INDEX "planned_runs_cancel_idx" ON "planned_runs" USING btree ("cancel_key","status","subject_version");--> statement-breakpoint
CREATE INDEX "planned_runs_cap_idx" ON "planned_runs" USING btree ("applet_id","contact_id","status","finished_at");--> statement-breakpoint
CREATE INDEX "planned_runs_applet_idx" ON "planned_runs" USING btree ("applet_id","due_at");--> statement-breakpoint
CREATE INDEX "planned_runs_event_idx" ON "planned_runs" USING btree ("event_id");--> statement-breakpoint
CREATE TABLE "planned_subjects" (
	"cancel_key" text PRIMARY KEY NOT NULL,
	"version" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "runs_status_created_idx" ON "runs" USING btree ("status","created_at");
