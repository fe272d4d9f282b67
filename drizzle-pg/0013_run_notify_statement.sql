-- The live views only need to hear that runs changed (each web process then reads what changed
-- since its last look, `changedAfter`), not a JSON description of every row: building and queueing
-- one notification per inserted row cost PostgreSQL 11-23 µs of CPU per ingested webhook, about
-- 15 % of an ingest (issue 16, bench/RESULTS.md). Inserts are now announced once per statement
-- (a group commit's batch of runs is one statement) through a transition table; a status change
-- still fires per row, with no payload, which PostgreSQL folds into one notification per channel
-- per transaction. Notifications are sent at COMMIT, so a listener never hears of a row it cannot
-- read yet.
CREATE OR REPLACE FUNCTION whenthen_notify_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'queued' OR (OLD.status = 'running' AND NEW.status <> 'running') THEN
    PERFORM pg_notify('whenthen_queued', '');
  END IF;
  PERFORM pg_notify('whenthen_runs', '');
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE FUNCTION whenthen_notify_runs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM inserted WHERE status = 'queued') THEN
    PERFORM pg_notify('whenthen_queued', '');
  END IF;
  IF EXISTS (SELECT 1 FROM inserted) THEN
    PERFORM pg_notify('whenthen_runs', '');
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER runs_notify ON runs;
--> statement-breakpoint
CREATE TRIGGER runs_notify AFTER UPDATE OF status ON runs FOR EACH ROW EXECUTE FUNCTION whenthen_notify_run();
--> statement-breakpoint
CREATE TRIGGER runs_notify_inserted AFTER INSERT ON runs REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION whenthen_notify_runs_inserted();
