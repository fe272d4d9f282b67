-- How another worker can tell that this one's process is gone without waiting for its lease
-- (lib/queue/liveness.ts). process_scope: the machine and pid namespace in which `pid` means this
-- process (host name, boot id, pid namespace); a worker in the same scope checks the pid.
-- session_lock: the key of the session-level advisory lock (pg_advisory_lock(classid, key)) the
-- worker holds on a session of its own for its life: the server releases it when the session ends.
-- NULL (every worker before this, or one whose session is down): its lease alone says.
ALTER TABLE "workers" ADD COLUMN "process_scope" text;--> statement-breakpoint
ALTER TABLE "workers" ADD COLUMN "session_lock" integer;
