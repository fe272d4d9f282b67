-- Alert settings may ask for an alert on a run's first failed attempt (a retry scheduled), not only
-- when the run is dead. 0: as before, alerts when runs settle failed or dead.
ALTER TABLE `alert_settings` ADD `alert_on_retry` integer DEFAULT 0 NOT NULL;
