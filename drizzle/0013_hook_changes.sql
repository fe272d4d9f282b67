-- The web process keeps each webhook's applet row (lib/db/store/sqlite/hook-cache.ts) and reads
-- this one counter instead, at most once per turn of its event loop: every change of the columns a
-- webhook reads, and every delete, by any process on the file (the editor, the worker's
-- auto-pause), moves it. SQLite only: PostgreSQL announces the same changes with NOTIFY
-- (drizzle-pg/0010).
CREATE TABLE `hook_changes` (
	`id` integer PRIMARY KEY NOT NULL,
	`n` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
INSERT INTO `hook_changes` (`id`, `n`) VALUES (1, 0);
--> statement-breakpoint
CREATE TRIGGER `applets_hook_changed` AFTER UPDATE OF `enabled`, `webhook_token`, `definition`, `listen_until` ON `applets`
BEGIN
  UPDATE `hook_changes` SET `n` = `n` + 1 WHERE `id` = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `applets_hook_deleted` AFTER DELETE ON `applets`
BEGIN
  UPDATE `hook_changes` SET `n` = `n` + 1 WHERE `id` = 1;
END;
