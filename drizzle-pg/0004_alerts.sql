ALTER TABLE "applets" ADD COLUMN "failure_streak" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "applets" ADD COLUMN "alert_open" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "applets" ADD COLUMN "trigger_alert_open" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "applets" ADD COLUMN "alert_channel" json;--> statement-breakpoint
ALTER TABLE "applets" ADD COLUMN "auto_pause" integer;--> statement-breakpoint
ALTER TABLE "applets" ADD COLUMN "paused_reason" text;--> statement-breakpoint
ALTER TABLE "applets" ADD COLUMN "paused_at" text;--> statement-breakpoint
CREATE TABLE "alert_settings" (
	"id" text PRIMARY KEY NOT NULL,
	"channel" json,
	"window_minutes" integer DEFAULT 15 NOT NULL,
	"trigger_threshold" integer DEFAULT 3 NOT NULL,
	"auto_pause" integer DEFAULT 0 NOT NULL,
	"auto_pause_after" integer DEFAULT 5 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "alerts" (
	"id" text PRIMARY KEY NOT NULL,
	"applet_id" text,
	"kind" text NOT NULL,
	"run_id" text,
	"error" text,
	"detail" text,
	"status" text DEFAULT 'pending' NOT NULL,
	"folded_into" text,
	"message" text,
	"channel_type" text,
	"provider_answer" text,
	"locked_until" text,
	"dispatched_at" text,
	"sent_at" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_applet_id_applets_id_fk" FOREIGN KEY ("applet_id") REFERENCES "public"."applets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "alerts_pending_idx" ON "alerts" USING btree ("applet_id","created_at") WHERE "alerts"."status" IN ('pending', 'sending');--> statement-breakpoint
CREATE INDEX "alerts_applet_dispatched_idx" ON "alerts" USING btree ("applet_id","dispatched_at");--> statement-breakpoint
CREATE INDEX "alerts_created_idx" ON "alerts" USING btree ("created_at");
