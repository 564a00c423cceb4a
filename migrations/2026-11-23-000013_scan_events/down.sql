DROP TABLE scan_events;
