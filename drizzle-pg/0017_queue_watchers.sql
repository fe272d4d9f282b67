-- A run that became claimable is announced (NOTIFY whenthen_queued) only while some worker has an
-- idle slot and says so: it keeps a row here while idle and removes it once busy again
-- (lib/queue/wakeups.ts). A transaction that notifies takes PostgreSQL's one notification lock
-- (a lock on "database 0", for the whole server) at its commit and holds it through the commit's
-- WAL flush, so the finish of every run, which announced the applet it freed, serialised the
-- commits of every worker: no group commit, and with two and four workers most backends waited on
-- that lock (pg_stat_activity: Lock/object) while the queue drained slower than with one
-- (bench/RESULTS.md, 2026-12-03). A worker whose slots are all busy needs no wake-up. A worker that
-- goes idle inserts its row, then waits for the transactions in progress at that moment (they may
-- have looked for a row before it went in) and looks at the queue again, so no run is left for the
-- slow poll. The probe is one page: a few rows, one per idle worker.
CREATE TABLE "queue_watchers" (
	"id" text PRIMARY KEY NOT NULL,
	"until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE OR REPLACE FUNCTION whenthen_notify_run() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF (NEW.status = 'queued' OR (OLD.status = 'running' AND NEW.status <> 'running'))
     AND EXISTS (SELECT 1 FROM queue_watchers WHERE until > now()) THEN
    PERFORM pg_notify('whenthen_queued', '');
  END IF;
  IF EXISTS (SELECT 1 FROM live_watchers WHERE until > now()) THEN
    PERFORM pg_notify('whenthen_runs', '');
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION whenthen_notify_runs_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM queue_watchers WHERE until > now()) AND EXISTS (SELECT 1 FROM inserted WHERE status = 'queued') THEN
    PERFORM pg_notify('whenthen_queued', '');
  END IF;
  IF EXISTS (SELECT 1 FROM live_watchers WHERE until > now()) AND EXISTS (SELECT 1 FROM inserted) THEN
    PERFORM pg_notify('whenthen_runs', '');
  END IF;
  RETURN NULL;
END;
$$;
