-- Run changes are announced by the database itself, so every write path (the store's settles,
-- retention, a restore, psql by hand) wakes the workers and feeds every web process's live view:
-- whenthen_queued (no payload; PostgreSQL folds identical notifications of one transaction into
-- one) when a run may have become claimable (a run queued, or a run leaving `running`, which frees
-- its applet's next run), whenthen_runs with the run's id, applet, status and
-- updated_at on every insert and status change. Notifications are sent at COMMIT, so a listener
-- never hears of a row it cannot read yet.
CREATE FUNCTION whenthen_notify_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'queued' OR (TG_OP = 'UPDATE' AND OLD.status = 'running' AND NEW.status <> 'running') THEN
    PERFORM pg_notify('whenthen_queued', '');
  END IF;
  PERFORM pg_notify('whenthen_runs', json_build_object('id', NEW.id, 'applet_id', NEW.applet_id, 'status', NEW.status, 'updated_at', NEW.updated_at)::text);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER runs_notify AFTER INSERT OR UPDATE OF status ON runs FOR EACH ROW EXECUTE FUNCTION whenthen_notify_run();
