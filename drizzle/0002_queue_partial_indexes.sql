DROP INDEX `runs_queue_idx`;--> statement-breakpoint
CREATE INDEX `runs_queued_idx` ON `runs` (`applet_id`,`next_attempt_at`) WHERE "runs"."status" = 'queued';--> statement-breakpoint
CREATE INDEX `runs_running_idx` ON `runs` (`applet_id`) WHERE "runs"."status" = 'running';