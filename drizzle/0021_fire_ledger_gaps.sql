-- The fire ledger's gaps. `applets.disabled_at`: when the applet was last disabled (by its owner or
-- by auto-pause; cleared on enable), so enabling a schedule can say which of its slots passed while
-- it was disabled. `run_control_state.rate_starts`: the times the applet's last `max` runs started
-- (a JSON array of ISO times), so a rate limit holds at the start too when the slots handed out at
-- ingest passed while nothing ran (the worker was down).
ALTER TABLE `applets` ADD `disabled_at` text;
--> statement-breakpoint
ALTER TABLE `run_control_state` ADD `rate_starts` text DEFAULT '[]' NOT NULL;
