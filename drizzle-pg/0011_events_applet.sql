-- An applet's events by time: the editor's sample events (newest of one applet) and the cascade of
-- an applet's delete read them through this instead of walking every event stored.
CREATE INDEX "events_applet_received_idx" ON "events" USING btree ("applet_id","received_at");
