-- Run changes are announced to the live views (NOTIFY whenthen_runs) only while some web process
-- has one open: it keeps a row here, renewed while an SSE stream is open (lib/bus/live.ts). At
-- COMMIT, PostgreSQL wakes every session of the database that LISTENs, whatever its channels, so
-- with workers and web processes listening each run's finish-and-claim woke all of them, and with
-- nobody watching that was for nothing (bench/RESULTS.md, 2026-12-03). whenthen_queued, which wakes
-- idle workers, is sent as before. The probe is one page: a few rows, one per web process. The
-- functions keep the schema they were made in (SET search_path FROM CURRENT), so a session with
-- another search_path (an operator's psql) that changes runs still finds live_watchers.
CREATE TABLE "live_watchers" (
	"id" text PRIMARY KEY NOT NULL,
	"until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE OR REPLACE FUNCTION whenthen_notify_run() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF NEW.status = 'queued' OR (OLD.status = 'running' AND NEW.status <> 'running') THEN
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
  IF EXISTS (SELECT 1 FROM inserted WHERE status = 'queued') THEN
    PERFORM pg_notify('whenthen_queued', '');
  END IF;
  IF EXISTS (SELECT 1 FROM live_watchers WHERE until > now()) AND EXISTS (SELECT 1 FROM inserted) THEN
    PERFORM pg_notify('whenthen_runs', '');
  END IF;
  RETURN NULL;
END;
$$;
