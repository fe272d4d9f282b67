CREATE TABLE `event_files` (
	`event_id` text NOT NULL,
	`filename` text NOT NULL,
	`content_type` text NOT NULL,
	`size` integer NOT NULL,
	`content` blob NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`event_id`, `filename`)
);
