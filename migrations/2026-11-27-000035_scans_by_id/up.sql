-- A scan worker names its scan by id alone (with its token), so the scan's tenant is found by
-- `scan_id`: every coordinator API call and `scan-worker`'s start. The primary key is
-- (tenant_id, scan_id), which that lookup cannot use; without this index each call read the
-- whole table.
CREATE UNIQUE INDEX scans_scan_id_idx ON scans (scan_id);
