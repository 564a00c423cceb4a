DROP TABLE scanned_objects;
DROP TABLE findings;
DROP TABLE scan_resources;
DROP TABLE scan_chunks;
DROP TABLE scan_connectors;
DROP TABLE scans;
