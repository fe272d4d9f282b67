-- What a webhook request reads of its applet (enabled, definition, token, trigger) is cached by
-- each web process and dropped when this announces a change (issue 16: no round trip per request
-- on PostgreSQL). Only those columns fire it: the run counters a finish updates do not.
-- Notifications are sent at COMMIT, so a listener never drops a row for a change it cannot read yet.
CREATE FUNCTION whenthen_notify_applet() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('whenthen_applets', COALESCE(NEW.id, OLD.id));
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER applets_notify AFTER UPDATE OF id, enabled, trigger_type, definition, webhook_token OR DELETE ON applets FOR EACH ROW EXECUTE FUNCTION whenthen_notify_applet();
