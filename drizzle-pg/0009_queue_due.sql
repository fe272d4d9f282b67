-- The queued runs in due order (issue 16): the claim's first pass reads the oldest few of them and
-- takes the first whose applet is free and which is its applet's head, a few index seeks however
-- many applets have queued runs (lib/db/store/postgres/queue-sql.ts). Partial, like
-- runs_queued_idx: it holds the queue, not the history.
CREATE INDEX "runs_due_idx" ON "runs" USING btree ("next_attempt_at","created_at","id") WHERE "runs"."status" = 'queued';
