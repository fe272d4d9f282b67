ALTER TABLE `runs` ADD `planned_run_id` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `action_index` integer;--> statement-breakpoint
ALTER TABLE `runs` ADD `due_at` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `reason` text;--> statement-breakpoint
CREATE TABLE `planned_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`applet_id` text NOT NULL,
	`event_id` text NOT NULL,
	`action_index` integer NOT NULL,
	`step_id` text NOT NULL,
	`subject_type` text NOT NULL,
	`subject_id` text NOT NULL,
	`subject_version` integer NOT NULL,
	`cancel_key` text NOT NULL,
	`contact_id` text,
	`event_type` text NOT NULL,
	`anchor_at` integer,
	`due_at` integer NOT NULL,
	`original_due_at` integer,
	`expires_at` integer,
	`status` text NOT NULL,
	`reason` text,
	`note` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`claim_token` text,
	`lease_until` integer,
	`last_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`applet_id`) REFERENCES `applets`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`event_id`) REFERENCES `events`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `planned_runs_due_idx` ON `planned_runs` (`status`,`due_at`,`id`);--> statement-breakpoint
CREATE INDEX `planned_runs_lease_idx` ON `planned_runs` (`status`,`lease_until`);--> statement-breakpoint
CREATE INDEX `planned_runs_cancel_idx` ON `planned_runs` (`cancel_key`,`status`,`subject_version`);--> statement-breakpoint
CREATE INDEX `planned_runs_cap_idx` ON `planned_runs` (`applet_id`,`contact_id`,`status`,`finished_at`);--> statement-breakpoint
CREATE INDEX `planned_runs_applet_idx` ON `planned_runs` (`applet_id`,`due_at`);--> statement-breakpoint
CREATE INDEX `planned_runs_event_idx` ON `planned_runs` (`event_id`);--> statement-breakpoint
CREATE TABLE `planned_subjects` (
	`cancel_key` text PRIMARY KEY NOT NULL,
	`version` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `runs_status_created_idx` ON `runs` (`status`,`created_at`);
