CREATE TABLE `applets` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`enabled` integer DEFAULT 1 NOT NULL,
	`trigger_type` text NOT NULL,
	`definition` text NOT NULL,
	`webhook_token` text NOT NULL,
	`last_fired_at` text,
	`run_count` integer DEFAULT 0 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `applets_webhook_token_unique` ON `applets` (`webhook_token`);--> statement-breakpoint
CREATE INDEX `applets_trigger_type_idx` ON `applets` (`trigger_type`,`enabled`);--> statement-breakpoint
CREATE TABLE `events` (
	`id` text PRIMARY KEY NOT NULL,
	`applet_id` text NOT NULL,
	`source` text NOT NULL,
	`dedupe_key` text,
	`payload` text NOT NULL,
	`received_at` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`applet_id`) REFERENCES `applets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `events_applet_dedupe_idx` ON `events` (`applet_id`,`dedupe_key`) WHERE "events"."dedupe_key" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `events_received_idx` ON `events` (`received_at`);--> statement-breakpoint
CREATE TABLE `job_locks` (
	`name` text PRIMARY KEY NOT NULL,
	`locked_by` text,
	`locked_at` text,
	`expires_at` text,
	`last_run_at` text
);
--> statement-breakpoint
CREATE TABLE `runs` (
	`id` text PRIMARY KEY NOT NULL,
	`applet_id` text NOT NULL,
	`event_id` text NOT NULL,
	`status` text NOT NULL,
	`attempt` integer DEFAULT 1 NOT NULL,
	`max_attempts` integer DEFAULT 5 NOT NULL,
	`next_attempt_at` text,
	`locked_by` text,
	`locked_at` text,
	`claim_token` text,
	`started_at` text,
	`finished_at` text,
	`error` text,
	`steps` text DEFAULT '[]' NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`applet_id`) REFERENCES `applets`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`event_id`) REFERENCES `events`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `runs_applet_created_idx` ON `runs` (`applet_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `runs_queue_idx` ON `runs` (`status`,`applet_id`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `runs_updated_idx` ON `runs` (`updated_at`);--> statement-breakpoint
CREATE INDEX `runs_event_idx` ON `runs` (`event_id`);--> statement-breakpoint
CREATE INDEX `runs_created_idx` ON `runs` (`created_at`);--> statement-breakpoint
CREATE TABLE `secrets` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`value_encrypted` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `secrets_name_unique` ON `secrets` (`name`);--> statement-breakpoint
CREATE TABLE `trigger_state` (
	`applet_id` text PRIMARY KEY NOT NULL,
	`next_run_at` text,
	`last_polled_at` text,
	`seen_keys` text DEFAULT '[]' NOT NULL,
	`last_value` text,
	`etag` text,
	`last_modified` text,
	`last_error` text,
	`error_count` integer DEFAULT 0 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`applet_id`) REFERENCES `applets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `trigger_state_next_run_idx` ON `trigger_state` (`next_run_at`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`password_hash` text NOT NULL,
	`session_version` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_unique` ON `users` (`email`);