CREATE TABLE `applet_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`applet_id` text NOT NULL,
	`version` integer NOT NULL,
	`name` text NOT NULL,
	`enabled` integer NOT NULL,
	`definition` text NOT NULL,
	`source` text NOT NULL,
	`restored_from` integer,
	`author_type` text NOT NULL,
	`author_id` text,
	`author_label` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`applet_id`) REFERENCES `applets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `applet_versions_applet_version_idx` ON `applet_versions` (`applet_id`,`version`);
--> statement-breakpoint
ALTER TABLE `runs` ADD `applet_version` integer;
--> statement-breakpoint
INSERT INTO `applet_versions` (`id`, `applet_id`, `version`, `name`, `enabled`, `definition`, `source`, `restored_from`, `author_type`, `author_id`, `author_label`, `created_at`, `updated_at`)
SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
       `id`, 1, `name`, `enabled`, `definition`, 'backfill', NULL, 'system', NULL, 'before version history', `updated_at`, `updated_at`
FROM `applets`;
