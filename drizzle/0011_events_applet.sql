-- An applet's events by time: the editor's sample events (newest of one applet) and the cascade of
-- an applet's delete read them through this instead of walking every event stored (with 1,000,000
-- events of a busy applet, seconds with the write lock held or the web process's event loop blocked).
CREATE INDEX `events_applet_received_idx` ON `events` (`applet_id`,`received_at`);
