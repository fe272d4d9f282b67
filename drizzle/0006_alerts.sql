ALTER TABLE `applets` ADD `failure_streak` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `applets` ADD `alert_open` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `applets` ADD `trigger_alert_open` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `applets` ADD `alert_channel` text;--> statement-breakpoint
ALTER TABLE `applets` ADD `auto_pause` integer;--> statement-breakpoint
ALTER TABLE `applets` ADD `paused_reason` text;--> statement-breakpoint
ALTER TABLE `applets` ADD `paused_at` text;--> statement-breakpoint
CREATE TABLE `alert_settings` (
	`id` text PRIMARY KEY NOT NULL,
	`channel` text,
	`window_minutes` integer DEFAULT 15 NOT NULL,
	`trigger_threshold` integer DEFAULT 3 NOT NULL,
	`auto_pause` integer DEFAULT 0 NOT NULL,
	`auto_pause_after` integer DEFAULT 5 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `alerts` (
	`id` text PRIMARY KEY NOT NULL,
	`applet_id` text,
	`kind` text NOT NULL,
	`run_id` text,
	`error` text,
	`detail` text,
	`status` text DEFAULT 'pending' NOT NULL,
	`folded_into` text,
	`message` text,
	`channel_type` text,
	`provider_answer` text,
	`locked_until` text,
	`dispatched_at` text,
	`sent_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`applet_id`) REFERENCES `applets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `alerts_pending_idx` ON `alerts` (`applet_id`,`created_at`) WHERE "alerts"."status" IN ('pending', 'sending');--> statement-breakpoint
CREATE INDEX `alerts_applet_dispatched_idx` ON `alerts` (`applet_id`,`dispatched_at`);--> statement-breakpoint
CREATE INDEX `alerts_created_idx` ON `alerts` (`created_at`);
