CREATE TABLE `workers` (
	`id` text PRIMARY KEY NOT NULL,
	`hostname` text NOT NULL,
	`pid` integer NOT NULL,
	`seen_at` text NOT NULL,
	`lease_until` text NOT NULL,
	`fault` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
