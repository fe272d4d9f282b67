ALTER TABLE `workers` ADD `smtp_port` integer;--> statement-breakpoint
ALTER TABLE `workers` ADD `metrics` text;
