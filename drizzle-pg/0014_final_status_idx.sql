-- runs_status_created_idx serves the run list filtered by a final status; queued and running runs
-- have partial indexes of their own (runs_queued_idx, runs_due_idx, runs_running_idx). Holding
-- every run, it was a candidate for the claim's "status = 'queued'" too, and a generic plan made
-- while the statistics said nothing was queued (a history of finished runs, an idle queue: the
-- usual state) chose it: each step of the claim's walk read and sorted every queued run, and the
-- finish looked its run up among every running entry, 13,885 pages for one finish-and-claim at
-- 5,000 queued runs (end to end ~350 runs/s, PostgreSQL at 150 % CPU). Partial, it cannot be
-- chosen for queued or running runs, and a run's passage through queued and running no longer
-- writes two entries into it. Rebuilt in the migration's transaction: writes to runs wait for the
-- build (about a second per million runs).
DROP INDEX "runs_status_created_idx";--> statement-breakpoint
CREATE INDEX "runs_status_created_idx" ON "runs" USING btree ("status","created_at") WHERE "runs"."status" NOT IN ('queued', 'running');
