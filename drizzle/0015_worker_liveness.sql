-- How another worker can tell that this one's process is gone without waiting for its lease
-- (lib/queue/liveness.ts). process_scope: the machine and pid namespace in which `pid` means this
-- process (host name, boot id, pid namespace); a worker in the same scope checks the pid.
-- session_lock: PostgreSQL only, the key of the session-level advisory lock the worker holds for
-- its life. NULL (every worker before this): its lease alone says whether it lives.
ALTER TABLE `workers` ADD `process_scope` text;--> statement-breakpoint
ALTER TABLE `workers` ADD `session_lock` integer;
