CREATE INDEX findings_scan_idx ON findings (tenant_id, scan_id);
ALTER TABLE findings ADD FOREIGN KEY (tenant_id, scan_id) REFERENCES scans ON DELETE CASCADE;
ALTER TABLE findings ADD FOREIGN KEY (tenant_id, connector_id) REFERENCES connectors ON DELETE CASCADE;
