-- The fire ledger: every fire whenthen considered and did not turn into an ordinary run (missed
-- while the worker was down, dropped by the catch-up window, deduplicated, refused, disabled) or
-- that a run alone does not explain (late). A fire that became a run is that run's own row and is
-- listed from events/runs (lib/db/store: fires.list), so a webhook pays no second insert.
-- `count` > 1 and `bucket`: refusals and requests to a disabled applet are counted per applet,
-- reason and minute in one row, never stored one by one.
CREATE TABLE `fire_ledger` (
	`id` text PRIMARY KEY NOT NULL,
	`applet_id` text NOT NULL,
	`at` text NOT NULL,
	`outcome` text NOT NULL,
	`detail` text NOT NULL,
	`run_id` text,
	`dedupe_key` text,
	`count` integer DEFAULT 1 NOT NULL,
	`bucket` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`applet_id`) REFERENCES `applets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `fire_ledger_applet_at_idx` ON `fire_ledger` (`applet_id`,`at`);--> statement-breakpoint
CREATE INDEX `fire_ledger_run_idx` ON `fire_ledger` (`run_id`) WHERE `run_id` IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `fire_ledger_bucket_idx` ON `fire_ledger` (`applet_id`,`bucket`) WHERE `bucket` IS NOT NULL;--> statement-breakpoint
CREATE INDEX `fire_ledger_updated_idx` ON `fire_ledger` (`updated_at`);--> statement-breakpoint
-- Expected activity per applet: what the user expects of a trigger fed from outside ("at least one
-- event every N hours"), and whether a quiet alert is open (quiet_since: recorded, no recovery yet).
CREATE TABLE `applet_activity` (
	`applet_id` text PRIMARY KEY NOT NULL,
	`expect_every_hours` real,
	`expect_since` text,
	`quiet_since` text,
	`quiet_detail` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`applet_id`) REFERENCES `applets`(`id`) ON UPDATE no action ON DELETE cascade
);
