-- Controls over runs (concurrency, rate limit, debounce; lib/queue/controls.ts).
-- "lane": the claim keeps one run running per (applet, lane) instead of per applet, and the unique
-- index makes it a constraint as before. Every run is in the applet's one lane '' unless its applet
-- says otherwise (a concurrency key's rendered value, or one of N parallel lanes), so an applet with
-- default controls claims exactly as before. A constant default adds the column without a rewrite.
ALTER TABLE "runs" ADD COLUMN "lane" text DEFAULT '' NOT NULL;--> statement-breakpoint
DROP INDEX "runs_queued_idx";--> statement-breakpoint
DROP INDEX "runs_running_idx";--> statement-breakpoint
CREATE INDEX "runs_queued_idx" ON "runs" USING btree ("applet_id","lane","next_attempt_at","created_at") WHERE "runs"."status" = 'queued' AND "runs"."applet_id" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "runs_running_idx" ON "runs" USING btree ("applet_id","lane") WHERE "runs"."status" = 'running' AND "runs"."applet_id" IS NOT NULL;--> statement-breakpoint
-- Per applet with a rate limit or a debounce: the start slots handed out in the last period, and
-- the run a debounce window is collecting events into, until when. Its row lock orders the ingests
-- of one applet.
CREATE TABLE "run_control_state" (
	"applet_id" text PRIMARY KEY NOT NULL,
	"rate_slots" text DEFAULT '[]' NOT NULL,
	"debounce_run_id" text,
	"debounce_until" text,
	"updated_at" text NOT NULL,
	FOREIGN KEY ("applet_id") REFERENCES "public"."applets"("id") ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- The events a debounced run carries besides its own ({{trigger.events}}), in arrival order.
CREATE TABLE "run_merged_events" (
	"run_id" text NOT NULL,
	"seq" integer NOT NULL,
	"event_id" text NOT NULL,
	PRIMARY KEY ("run_id", "seq"),
	FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON UPDATE no action ON DELETE cascade
);
