-- The claim's statements must read through the indexes they were written for whatever the
-- statistics say. With statistics from an idle queue (rows=1 estimated for "status = 'queued'"),
-- a generic plan of the finish-and-claim chose a full scan and sort of runs_queued_idx for each step
-- of its walk in due order (runs_due_idx is that order), and runs_running_idx instead of the primary
-- key for the finish's lookup by id: 3,849 pages and ~3 ms per run at a few hundred queued runs,
-- PostgreSQL at a core's worth of CPU for ~350 runs/s (issue 16). "applet_id IS NOT NULL" (the
-- column is NOT NULL: the same rows) makes them usable only by a statement that names the applet,
-- as every statement meant for them does. Rebuilt in the migration's transaction, which holds the
-- table's lock, so "one running run per applet" is never unenforced.
DROP INDEX "runs_queued_idx";--> statement-breakpoint
DROP INDEX "runs_running_idx";--> statement-breakpoint
CREATE INDEX "runs_queued_idx" ON "runs" USING btree ("applet_id","next_attempt_at","created_at") WHERE "runs"."status" = 'queued' AND "runs"."applet_id" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "runs_running_idx" ON "runs" USING btree ("applet_id") WHERE "runs"."status" = 'running' AND "runs"."applet_id" IS NOT NULL;
