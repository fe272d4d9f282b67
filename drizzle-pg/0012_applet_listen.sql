-- "Listen for test event" (#20) in the database, not in one web process's memory: with several web
-- processes behind one address the editor's request and the sender's webhook reach different ones.
-- Until this time the applet's next request is kept as a sample; the first one clears it.
ALTER TABLE "applets" ADD COLUMN "listen_until" text;
--> statement-breakpoint
-- A webhook reads listen_until with the rest of its row (the hook cache of 0010): its change is announced too.
DROP TRIGGER applets_notify ON applets;
--> statement-breakpoint
CREATE TRIGGER applets_notify AFTER UPDATE OF id, enabled, trigger_type, definition, webhook_token, listen_until OR DELETE ON applets FOR EACH ROW EXECUTE FUNCTION whenthen_notify_applet();
