-- Wait steps: one row per wait a run reached (run_id, seq: its n-th wait), or one a resume call
-- reached first. A waiting run is its "runs" row with status 'waiting' plus this row: no worker
-- holds it. "resume_at" is when the tick resumes it (the time, or the timeout, whichever is first);
-- "resolution" is set exactly once (a conditional UPDATE), in the transaction that queues the run.
CREATE TABLE "run_waits" (
	"run_id" text NOT NULL,
	"seq" integer NOT NULL,
	"applet_id" text NOT NULL,
	"step_id" text NOT NULL,
	"kind" text NOT NULL,
	"resume_at" text,
	"resume_as" text,
	"timeout_at" text,
	"detail" text,
	"resolution" text,
	"resolved_at" text,
	"resolved_by" text,
	"output" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	PRIMARY KEY ("run_id", "seq"),
	FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX "run_waits_due_idx" ON "run_waits" ("resume_at") WHERE "resolution" IS NULL AND "resume_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "runs_waiting_idx" ON "runs" ("applet_id", "updated_at") WHERE "status" = 'waiting';
