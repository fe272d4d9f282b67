-- "Listen for test event" (#20) in the database, not in one web process's memory: with several web
-- processes behind one address the editor's request and the sender's webhook reach different ones.
-- Until this time the applet's next request is kept as a sample; the first one clears it.
ALTER TABLE `applets` ADD `listen_until` text;
